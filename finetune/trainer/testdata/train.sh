#!/bin/sh
# header
# Written by distill: runs the trainer in the job directory, then records
# its exit status in train.exit.
export PYTHONUNBUFFERED=1
export DISTILL_TRAIN_CONFIG=train_config.json
export DISTILL_OUTPUT_DIR=adapter
export HF_HOME=/scratch/hf
rm -f train.exit
/opt/venv/bin/python train_sft.py train_config.json
status=$?
echo "distill: trainer exited with status $status"
echo "$status" > train.exit.tmp && mv -f train.exit.tmp train.exit
exit "$status"
