"""Time a TRL training step against a plain PEFT step on the same batches.

    python3 profile_step.py --model DIR --train train.parquet --mode trl|plain \
        [--batch-size 2] [--grad-accum 4] [--steps 3] [--max-length 2048] [--precision auto] \
        [--lora-dropout 0.05] [--trl-loss]

--train is the parquet "messages" file that distill train exports
(OUT/data/train.parquet). Both modes see the same micro-batches: TRL's
SFTTrainer tokenizes the examples as train_sft.py has it do (prompt and
completion, the loss on the completion only) and its data loader collates
them; the first steps x grad-accum micro-batches are used.

- trl runs SFTTrainer.train for --steps optimiser steps, as train_sft.py
  configures it (on a CPU, with train_sft.py's completion loss; --trl-loss
  keeps TRL's own).
- plain runs the textbook loop on the PEFT model: forward with the labels
  (the completion's tokens; the model computes its own loss over full
  logits), backward, and AdamW every grad-accum micro-batches.

The first step is a warm-up and is not timed. It prints one JSON line:
the mode, seconds per step (median of the timed steps), the tokens of a
step (attention mask), seconds per 1,000 tokens, and the process's peak
resident memory in MB (run each mode in its own process to compare
peaks).
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_sft  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--mode", choices=("trl", "plain"), required=True)
    ap.add_argument("--batch-size", type=int, default=2)
    ap.add_argument("--grad-accum", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--max-length", type=int, default=2048)
    ap.add_argument("--precision", default="auto")
    ap.add_argument("--lora-dropout", type=float, default=0.05)
    ap.add_argument("--trl-loss", action="store_true", help="TRL's own loss (its fused output layer), as on a GPU")
    ap.add_argument("--out", default="/tmp/distill-profile-step")
    a = ap.parse_args()

    import torch
    from datasets import load_dataset
    from peft import LoraConfig
    from transformers import AutoTokenizer, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    gpu = torch.cuda.is_available()
    precision = train_sft.resolve_precision(a.precision, torch.cuda if gpu else None)
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    torch.manual_seed(42)

    tokenizer = AutoTokenizer.from_pretrained(a.model)
    data = load_dataset("parquet", data_files={"train": a.train})["train"]
    data = data.filter(lambda ex: train_sft.token_count(tokenizer, ex["messages"]) <= a.max_length)
    data = data.map(lambda ex: {"prompt": ex["messages"][:-1], "completion": ex["messages"][-1:]},
                    remove_columns=["messages"])
    micro = (a.steps + 1) * a.grad_accum * a.batch_size
    data = data.select(range(min(micro, len(data))))

    args = SFTConfig(
        output_dir=a.out, per_device_train_batch_size=a.batch_size, gradient_accumulation_steps=a.grad_accum,
        learning_rate=1e-4, max_steps=a.steps + 1, max_length=a.max_length, completion_only_loss=True,
        bf16=precision == "bf16", use_cpu=not gpu and precision == "bf16", gradient_checkpointing=False,
        logging_steps=1, save_strategy="no", report_to="none", seed=42,
        train_sampling_strategy="sequential",  # the same batches in both modes
    )
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=a.lora_dropout, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    model = train_sft.load_model(a.model, {}, dtype)
    times = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            self.t = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - self.t)

    trainer_class = SFTTrainer if gpu or a.trl_loss else train_sft.completion_loss_trainer(SFTTrainer)
    trainer = trainer_class(model=model, args=args, train_dataset=data, peft_config=lora,
                         processing_class=tokenizer, callbacks=[Clock()])
    batches = list(trainer.get_train_dataloader())
    tokens = [int(b["attention_mask"].sum()) for b in batches]
    per_step = [sum(tokens[i * a.grad_accum:(i + 1) * a.grad_accum]) for i in range(a.steps + 1)]

    if a.mode == "trl":
        trainer.train()
    else:
        peft_model = trainer.model  # the PEFT model TRL built, before any step
        peft_model.train()
        opt = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=1e-4)
        for step in range(a.steps + 1):
            t = time.perf_counter()
            for b in batches[step * a.grad_accum:(step + 1) * a.grad_accum]:
                # The collator's labels: -100 but on the completion's tokens.
                out = peft_model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"])
                (out.loss / a.grad_accum).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - t)

    timed, timed_tokens = times[1:], per_step[1:]
    s = statistics.median(timed)
    tok = statistics.median(timed_tokens)
    print(json.dumps({
        "mode": a.mode, "model": a.model, "precision": precision, "threads": torch.get_num_threads(),
        "steps_timed": len(timed), "seconds_per_step": round(s, 2), "tokens_per_step": tok,
        "seconds_per_1k_tokens": round(s / tok * 1000, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }), flush=True)


if __name__ == "__main__":
    main()
