"""Train a LoRA adapter by supervised fine-tuning, with TRL and PEFT.

distill (package finetune/trainer) copies this script into a job directory
beside its configuration and runs it there:

    python3 train_sft.py train_config.json

The configuration is a JSON object:

    model            base model: a Hugging Face id or a local path
    train_file       parquet file with a "messages" column: system, user
                     (the judge's input) and assistant (the teacher's verdict)
    val_file         the same for validation, or "" for none
    output_dir       where the adapter is saved
    lora_rank, lora_alpha, lora_dropout, target_modules ([] for PEFT's
    defaults), learning_rate, epochs, batch_size, gradient_accumulation,
    max_length, seed, bf16, logging_steps

Besides the libraries' own logs, standard output gets one line when
training starts and one per logging step,

    DISTILL_PROGRESS {"step": 30, "total_steps": 300, "loss": 1.23, ...}

and, once the adapter is saved, the final metrics:

    DISTILL_DONE {"train_loss": 0.91, "eval_loss": 0.88, ...}

The exit status is 0 only when the adapter has been saved.
"""

import json
import math
import sys


def numbers(record):
    """The finite numbers of a dict (what JSON and distill can read)."""
    return {
        k: v
        for k, v in record.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


def emit(tag, record):
    print(tag, json.dumps(record), flush=True)


def main(path):
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)

    import torch
    from datasets import load_dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    class Progress(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                emit("DISTILL_PROGRESS", {"step": state.global_step, "total_steps": state.max_steps})

        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.is_world_process_zero:
                emit("DISTILL_PROGRESS", {"step": state.global_step, "total_steps": state.max_steps, **numbers(logs or {})})

    files = {"train": cfg["train_file"]}
    if cfg.get("val_file"):
        files["validation"] = cfg["val_file"]
    data = load_dataset("parquet", data_files=files)

    # Settings that TRL or transformers renamed across versions go under the
    # name this version knows.
    known = SFTConfig.__dataclass_fields__
    args = {
        "output_dir": cfg["output_dir"],
        "num_train_epochs": cfg["epochs"],
        "per_device_train_batch_size": cfg["batch_size"],
        "per_device_eval_batch_size": cfg["batch_size"],
        "gradient_accumulation_steps": cfg["gradient_accumulation"],
        "learning_rate": cfg["learning_rate"],
        "seed": cfg["seed"],
        "bf16": cfg["bf16"],
        "logging_steps": cfg["logging_steps"],
        "save_strategy": "epoch",
        "report_to": "none",
    }
    args["max_length" if "max_length" in known else "max_seq_length"] = cfg["max_length"]
    if "validation" in data:
        args["eval_strategy" if "eval_strategy" in known else "evaluation_strategy"] = "epoch"
    if "completion_only_loss" in known:
        # Learn the verdict only: each conversation becomes a prompt (all but
        # the last message) and its completion (the assistant's answer).
        data = data.map(
            lambda ex: {"prompt": ex["messages"][:-1], "completion": ex["messages"][-1:]},
            remove_columns=["messages"],
        )
        args["completion_only_loss"] = True
    else:
        print("train_sft: this TRL has no completion_only_loss; the loss covers whole conversations",
              file=sys.stderr, flush=True)

    model = AutoModelForCausalLM.from_pretrained(
        cfg["model"], torch_dtype=torch.bfloat16 if cfg["bf16"] else torch.float32)
    lora = LoraConfig(
        r=cfg["lora_rank"],
        lora_alpha=cfg["lora_alpha"],
        lora_dropout=cfg["lora_dropout"],
        target_modules=cfg["target_modules"] or None,
        task_type="CAUSAL_LM",
    )
    trainer = SFTTrainer(
        model=model,
        args=SFTConfig(**args),
        train_dataset=data["train"],
        eval_dataset=data.get("validation"),
        peft_config=lora,
        callbacks=[Progress()],
    )
    metrics = numbers(trainer.train().metrics)
    for record in trainer.state.log_history:
        if "eval_loss" in record:
            metrics.update(numbers(record))  # the last evaluation's
    trainer.save_model(cfg["output_dir"])  # the adapter only, for a PEFT model
    if trainer.is_world_process_zero():
        emit("DISTILL_DONE", metrics)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 train_sft.py CONFIG.json")
    main(sys.argv[1])
