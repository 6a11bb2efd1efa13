"""Train a LoRA adapter by supervised fine-tuning, with TRL and PEFT.

distill (package finetune/trainer) copies this script into a job directory
beside its configuration and runs it there:

    python3 train_sft.py train_config.json

The configuration is a JSON object:

    model            base model: a Hugging Face id, a local model directory,
                     or a GGUF file (which transformers dequantizes, with the
                     gguf package)
    train_file       parquet file with a "messages" column: system, user
                     (the judge's input) and assistant (the teacher's verdict)
    val_file         the same for validation, or "" for none
    output_dir       where the adapter is saved, with the tokenizer and the
                     chat template it was trained with (chat_template.jinja)
    lora_rank, lora_alpha, lora_dropout, target_modules ([] for PEFT's
    defaults), learning_rate, epochs, max_steps (0: epochs decide),
    batch_size, gradient_accumulation, max_length, seed, logging_steps,
    max_eval_examples (0: all)
    loss             "completion" (or absent): the loss covers the assistant's
                     verdict, and over-long examples are left out; "full":
                     the whole chat-templated text, over-long examples cut
                     at max_length, as the authors' code trains
    precision        "bf16", "fp32", or "auto": bfloat16 where the hardware
                     computes it fast (a GPU that supports it; a CPU with
                     AMX, whose bfloat16 matrix products run several times
                     faster than float32), float32 elsewhere (AVX512-BF16
                     alone is not enough: without AMX, a TRL step of
                     SmolLM2-135M took 1.5 times as long in bfloat16)

Without a GPU, activations are not recomputed (TRL's gradient
checkpointing is turned off): on a CPU, time is short, not memory.

Examples longer than max_length tokens (the whole conversation, as the
chat template renders it) are left out, never truncated: a truncated
example would teach the judge a verdict cut in half. Their number is
reported. With loss "full" they are cut instead, and counted too.

Besides the libraries' own logs, standard output gets a line when training
starts and after every optimiser step (with the loss at logging steps),

    DISTILL_PROGRESS {"step": 30, "total_steps": 300, "loss": 1.23, "eta_s": 410, ...}

and, once the adapter is saved, the final metrics:

    DISTILL_DONE {"train_loss": 0.91, "eval_loss": 0.88, ...}

The exit status is 0 only when the adapter has been saved.

    python3 train_sft.py --dequantize MODEL.gguf DIR

writes the model of a GGUF file, dequantized by transformers, as a plain
model directory (weights, config, tokenizer with its chat template): a base
model to train on, and the base that llama.cpp's convert_lora_to_gguf.py
reads the adapter's architecture from.
"""

import inspect
import json
import math
import os
import sys
import time

# The chat template the adapter was trained with, saved beside it: what
# the server that serves the adapter must apply too.
TEMPLATE_FILE = "chat_template.jinja"


def numbers(record):
    """The finite numbers of a dict (what JSON and distill can read)."""
    return {
        k: v
        for k, v in record.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }


def emit(tag, record):
    print(tag, json.dumps(record), flush=True)


def fail(msg):
    print("train_sft: error: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def source(name):
    """from_pretrained's arguments for a model name: a GGUF file is read
    from its directory with gguf_file."""
    if name.lower().endswith(".gguf") and os.path.isfile(name):
        d, f = os.path.split(os.path.abspath(name))
        return d, {"gguf_file": f}
    return name, {}


def load_model(name, where, dtype):
    """The model of name, in dtype. transformers 5 keeps a model read from a
    GGUF file under a GGUF "quantizer" even when it dequantized every
    weight, and such a model can be neither trained nor saved: the weights
    go into a plain model of the same configuration."""
    from transformers import AutoModelForCausalLM

    # transformers 4.56 renamed torch_dtype to dtype.
    params = inspect.signature(AutoModelForCausalLM.from_pretrained).parameters
    dtype_arg = "dtype" if "dtype" in params else "torch_dtype"
    model = AutoModelForCausalLM.from_pretrained(name, **where, **{dtype_arg: dtype})
    if getattr(model, "hf_quantizer", None) is None:
        return model
    state = model.state_dict()
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(state)
    return plain.to(dtype)


def dequantize(path, out):
    import torch
    from transformers import AutoTokenizer

    name, where = source(path)
    if not where:
        fail(f"{path}: not a GGUF file")
    tokenizer = AutoTokenizer.from_pretrained(name, **where)
    model = load_model(name, where, torch.float32)
    tmp = out + ".tmp"
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if tokenizer.chat_template:
        with open(os.path.join(tmp, TEMPLATE_FILE), "w", encoding="utf-8") as f:
            f.write(tokenizer.chat_template)
    os.replace(tmp, out)


def cpu_has_amx(cpuinfo="/proc/cpuinfo"):
    """Whether the CPU multiplies bfloat16 matrices on AMX tiles. A CPU with
    AVX512-BF16 but no AMX multiplies them more slowly than float32 (torch's
    bf16 product: 190 against 330 GFLOP/s on 2 cores of such a Xeon)."""
    try:
        with open(cpuinfo, encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return "amx_bf16" in flags
    except OSError:
        pass
    return False


def resolve_precision(precision, cuda):
    """The precision to train in: bf16 or fp32."""
    if precision in ("bf16", "fp32"):
        return precision
    if precision != "auto":
        fail(f"precision {precision!r}: want auto, bf16 or fp32")
    if cuda is not None:
        return "bf16" if cuda.is_available() and cuda.is_bf16_supported() else "fp32"
    return "bf16" if cpu_has_amx() else "fp32"


def completion_loss_trainer(base):
    """A subclass of the SFTTrainer class base whose loss, on a CPU, projects
    only the positions that have a label (the completion's) through the
    model's output layer and takes their cross-entropy, summed and divided
    by the labelled tokens of the whole optimiser step, as TRL's own loss
    does. TRL's fused output layer is built for GPUs (Triton); on a CPU it
    took a quarter of each step here (SmolLM2-135M, bf16: 4.72 against 3.79
    seconds per 1,000 tokens for the textbook PEFT loop; see
    profile_step.py). Its token accuracy and entropy metrics are kept,
    over the labelled positions."""

    class CompletionLossTrainer(base):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            import torch
            import torch.nn.functional as F

            core = model.get_base_model() if hasattr(model, "get_base_model") else model
            backbone = getattr(core, core.base_model_prefix)
            hidden = backbone(input_ids=inputs["input_ids"], attention_mask=inputs.get("attention_mask"),
                              use_cache=False).last_hidden_state
            labels = inputs["labels"][:, 1:]
            mask = labels != -100
            logits = core.get_output_embeddings()(hidden[:, :-1][mask]).float()
            targets = labels[mask]
            n = num_items_in_batch if num_items_in_batch is not None else mask.sum()
            loss = F.cross_entropy(logits, targets, reduction="sum") / torch.as_tensor(n).clamp(min=1)
            with torch.no_grad():
                if targets.numel() > 0:
                    logp = torch.log_softmax(logits, dim=-1)
                    metrics = self._metrics["train" if model.training else "eval"]
                    metrics["mean_token_accuracy"].append((logits.argmax(-1) == targets).float().mean().item())
                    metrics["entropy"].append(-(logp.exp() * logp).sum(-1).mean().item())
            return (loss, None) if return_outputs else loss

    return CompletionLossTrainer


def token_count(tokenizer, messages):
    """The length in tokens of a conversation as the chat template renders it."""
    ids = tokenizer.apply_chat_template(messages, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return len(ids)


# The libraries a training run imports, by module name.
REQUIRED = ("torch", "transformers", "peft", "trl", "datasets")


def check_libraries():
    """Fails with one line naming what is missing, before any import."""
    import importlib.util

    missing = [m for m in REQUIRED if importlib.util.find_spec(m) is None]
    if missing:
        fail("missing Python packages: %s (in %s); scripts/local-models install-train installs them, "
             "or --backend builtin trains the built-in judge without them" % (", ".join(missing), sys.executable))


def main(path):
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)

    check_libraries()
    import torch
    from datasets import load_dataset
    from peft import LoraConfig
    from transformers import AutoTokenizer, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    class Progress(TrainerCallback):
        """DISTILL_PROGRESS lines: at the start, after every step, and with
        the logs of every logging step."""

        def __init__(self):
            self.started = None

        def line(self, state, logs=None):
            if not state.is_world_process_zero:
                return
            rec = {"step": state.global_step, "total_steps": state.max_steps}
            if self.started is not None and state.global_step > 0:
                elapsed = time.monotonic() - self.started
                rec["elapsed_s"] = round(elapsed, 1)
                rec["eta_s"] = round(elapsed / state.global_step * max(state.max_steps - state.global_step, 0), 1)
            rec.update(numbers(logs or {}))
            emit("DISTILL_PROGRESS", rec)

        def on_train_begin(self, args, state, control, **kwargs):
            self.started = time.monotonic()
            self.line(state)

        def on_step_end(self, args, state, control, **kwargs):
            self.line(state)

        def on_log(self, args, state, control, logs=None, **kwargs):
            self.line(state, logs)

    name, where = source(cfg["model"])
    tokenizer = AutoTokenizer.from_pretrained(name, **where)
    if not getattr(tokenizer, "chat_template", None):
        fail(f"the tokenizer of {cfg['model']} has no chat template: the judge's prompts could not be "
             "rendered as the server renders them (give a chat model, or one whose tokenizer has a template)")

    files = {"train": cfg["train_file"]}
    if cfg.get("val_file"):
        files["validation"] = cfg["val_file"]
    data = load_dataset("parquet", data_files=files)

    # Over-long examples are left out, not truncated (with the full loss,
    # TRL cuts them at max_length).
    limit = cfg["max_length"]
    full = cfg.get("loss") == "full"
    if cfg.get("loss", "completion") not in ("completion", "full"):
        fail(f"loss {cfg['loss']!r}: want completion or full")
    kept, over = {}, {}
    for split in list(data.keys()):
        n = len(data[split])
        fits = data[split].filter(lambda ex: token_count(tokenizer, ex["messages"]) <= limit)
        over[split] = n - len(fits)
        if not full:
            data[split] = fits
        kept[split] = len(data[split])
        what = "are cut to fit" if full else "are left out"
        print(f"train_sft: {split}: {len(fits)} of {n} examples fit in {limit} tokens; the others {what}", flush=True)
    if kept["train"] == 0:
        fail(f"no training example fits in max_length {limit} tokens")
    cap = cfg.get("max_eval_examples") or 0
    if "validation" in data and cap > 0 and len(data["validation"]) > cap:
        data["validation"] = data["validation"].select(range(cap))
    if "validation" in data and len(data["validation"]) == 0:
        del data["validation"]

    # Settings that TRL or transformers renamed across versions go under the
    # name this version knows.
    known = SFTConfig.__dataclass_fields__
    max_steps = cfg.get("max_steps") or 0
    gpu = torch.cuda.is_available()
    precision = resolve_precision(cfg.get("precision", "auto"), torch.cuda if gpu else None)
    print(f"train_sft: training in {precision} on the {'GPU' if gpu else 'CPU'}", flush=True)
    args = {
        "output_dir": cfg["output_dir"],
        "num_train_epochs": cfg["epochs"],
        "per_device_train_batch_size": cfg["batch_size"],
        "per_device_eval_batch_size": cfg["batch_size"],
        "gradient_accumulation_steps": cfg["gradient_accumulation"],
        "learning_rate": cfg["learning_rate"],
        "seed": cfg["seed"],
        "bf16": precision == "bf16",
        "logging_steps": cfg["logging_steps"],
        "save_strategy": "epoch",
        "report_to": "none",
    }
    if max_steps > 0:
        args["max_steps"] = max_steps
        args["save_strategy"] = "no"  # the adapter is saved at the end
    args["max_length" if "max_length" in known else "max_seq_length"] = limit
    if "validation" in data and max_steps <= 0:
        args["eval_strategy" if "eval_strategy" in known else "evaluation_strategy"] = "epoch"
    if full:
        # The loss covers every token of the conversation (TRL's language
        # modelling on "messages"), as the authors' code trains.
        for setting in ("completion_only_loss", "assistant_only_loss"):
            if setting in known:
                args[setting] = False
    elif "completion_only_loss" in known:
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
    if not gpu:
        # transformers refuses bf16 without a GPU unless told to use the CPU.
        if precision == "bf16" and "use_cpu" in known:
            args["use_cpu"] = True
        # TRL recomputes activations by default, trading compute for GPU
        # memory; on a CPU compute is what is short.
        for setting in ("gradient_checkpointing", "activation_checkpointing"):
            if setting in known:
                args[setting] = False

    model = load_model(name, where, torch.bfloat16 if precision == "bf16" else torch.float32)
    lora = LoraConfig(
        r=cfg["lora_rank"],
        lora_alpha=cfg["lora_alpha"],
        lora_dropout=cfg["lora_dropout"],
        target_modules=cfg["target_modules"] or None,
        task_type="CAUSAL_LM",
    )
    # TRL 0.12 renamed tokenizer to processing_class.
    params = inspect.signature(SFTTrainer.__init__).parameters
    tok_arg = "processing_class" if "processing_class" in params else "tokenizer"
    trainer_class = SFTTrainer
    if not gpu and args.get("completion_only_loss"):
        trainer_class = completion_loss_trainer(SFTTrainer)
    trainer = trainer_class(
        model=model,
        args=SFTConfig(**args),
        train_dataset=data["train"],
        eval_dataset=data.get("validation"),
        peft_config=lora,
        callbacks=[Progress()],
        **{tok_arg: tokenizer},
    )
    metrics = numbers(trainer.train().metrics)
    for record in trainer.state.log_history:
        if "eval_loss" in record:
            metrics.update(numbers(record))  # the last evaluation's
    if "validation" in data and "eval_loss" not in metrics:
        metrics.update(numbers(trainer.evaluate()))
    metrics["train_examples_used"] = kept["train"]
    metrics["train_examples_over_max_length"] = over["train"]
    if full:
        metrics["train_examples_cut"] = over["train"]
    if "validation" in data:
        metrics["val_examples_used"] = len(data["validation"])
    trainer.save_model(cfg["output_dir"])  # the adapter, and the tokenizer
    if trainer.is_world_process_zero():
        with open(os.path.join(cfg["output_dir"], TEMPLATE_FILE), "w", encoding="utf-8") as f:
            f.write(tokenizer.chat_template)
        emit("DISTILL_DONE", metrics)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--dequantize":
        dequantize(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit("usage: python3 train_sft.py CONFIG.json | --dequantize MODEL.gguf DIR")
