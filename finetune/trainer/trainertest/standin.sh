# A stand-in for a LoRA trainer, for the tests of the backends that run
# trainers (see trainertest.Command). It runs in the job directory, reads
# what to do from the file standin.mode there, and writes the adapter to
# $DISTILL_OUTPUT_DIR as train_sft.py would, printing the same kinds of
# progress lines:
#
#   succeed   three quick steps, then a PEFT-like adapter; exit 0
#   fail      one step, then a Python-like traceback; exit 1
#   slow      steps every 50ms for over a minute, with a grandchild
#             process (its pid in grandchild.pid) in the same process group
#   stubborn  like slow, but everything ignores SIGTERM
mode=succeed
if [ -f standin.mode ]; then mode=$(cat standin.mode); fi
out=${DISTILL_OUTPUT_DIR:-adapter}
echo "stand-in trainer: mode $mode, config ${DISTILL_TRAIN_CONFIG:-none}"
case $mode in
succeed)
	echo 'DISTILL_PROGRESS {"step": 0, "total_steps": 3}'
	for i in 1 2 3; do
		sleep 0.02
		echo "{'loss': 1.$i, 'grad_norm': 0.5, 'learning_rate': 0.0001, 'epoch': $i.0}"
		echo "DISTILL_PROGRESS {\"step\": $i, \"total_steps\": 3, \"loss\": 1.$i}"
	done
	mkdir -p "$out" || exit 1
	printf '{"peft_type": "LORA", "r": 16, "lora_alpha": 32}\n' >"$out/adapter_config.json"
	printf 'stand-in weights' >"$out/adapter_model.safetensors"
	echo 'DISTILL_DONE {"train_loss": 1.2, "eval_loss": 1.1, "epoch": 3.0}'
	;;
fail)
	echo 'DISTILL_PROGRESS {"step": 1, "total_steps": 3, "loss": 2.5}'
	echo 'Traceback (most recent call last):' >&2
	echo '  File "train_sft.py", line 1, in <module>' >&2
	echo 'torch.OutOfMemoryError: CUDA out of memory.' >&2
	exit 1
	;;
slow | stubborn)
	if [ "$mode" = stubborn ]; then trap '' TERM; fi
	sh -c 'echo $$ >grandchild.pid.tmp && mv grandchild.pid.tmp grandchild.pid; exec sleep 90' &
	i=0
	while [ $i -lt 1500 ]; do
		i=$((i + 1))
		echo "DISTILL_PROGRESS {\"step\": $i, \"total_steps\": 100000, \"loss\": 3.0}"
		sleep 0.05
	done
	;;
*)
	echo "stand-in trainer: unknown mode $mode" >&2
	exit 2
	;;
esac
