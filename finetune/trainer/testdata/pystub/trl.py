# Stand-in for trl, for TestTrainSFTScript: SFTConfig has the fields of a
# recent TRL (or of an old one with STUB_OLD_TRL=1), and SFTTrainer records
# what it was given in stub_trainer.json, "trains" four steps (or max_steps),
# calling the callbacks as transformers' Trainer does, evaluates when asked,
# and saves a PEFT-like adapter.
import dataclasses
import json
import os

_common = ["output_dir", "num_train_epochs", "max_steps", "per_device_train_batch_size", "per_device_eval_batch_size",
           "gradient_accumulation_steps", "learning_rate", "seed", "bf16", "logging_steps", "save_strategy",
           "report_to", "gradient_checkpointing", "use_cpu"]
_old = bool(os.environ.get("STUB_OLD_TRL"))
if _old:
    _fields = _common + ["max_seq_length", "evaluation_strategy"]
else:
    _fields = _common + ["max_length", "eval_strategy", "completion_only_loss"]
SFTConfig = dataclasses.make_dataclass("SFTConfig", [(f, object, dataclasses.field(default=None)) for f in _fields])


class _State:
    def __init__(self):
        self.global_step = 0
        self.max_steps = 0
        self.is_world_process_zero = True
        self.log_history = []


class _Output:
    def __init__(self, metrics):
        self.metrics = metrics


class SFTTrainer:
    def _init(self, model, args, train_dataset, eval_dataset, peft_config, callbacks, tok):
        self.args, self.peft, self.callbacks, self.eval = args, peft_config, callbacks, eval_dataset
        self.state = _State()
        with open("stub_trainer.json", "w") as f:
            json.dump({"class": type(self).__name__, "model": model, "args": {k: v for k, v in dataclasses.asdict(args).items() if v is not None},
                       "lora": peft_config.kwargs, "train_example": train_dataset[0],
                       "train_examples": len(train_dataset), "eval_examples": len(eval_dataset or []),
                       "tokenizer": {"name": tok.name, **tok.kwargs}}, f)

    if _old:
        def __init__(self, model, args, train_dataset, eval_dataset=None, peft_config=None, callbacks=(), tokenizer=None):
            self._init(model, args, train_dataset, eval_dataset, peft_config, callbacks, tokenizer)
    else:
        def __init__(self, model, args, train_dataset, eval_dataset=None, peft_config=None, callbacks=(), processing_class=None):
            self._init(model, args, train_dataset, eval_dataset, peft_config, callbacks, processing_class)

    def train(self):
        steps = self.args.max_steps if self.args.max_steps else 4
        self.state.max_steps = steps
        for cb in self.callbacks:
            cb.on_train_begin(self.args, self.state, None)
        for step in range(1, steps + 1):
            self.state.global_step = step
            for cb in self.callbacks:
                cb.on_step_end(self.args, self.state, None)
            logs = {"loss": 2.0 / step, "grad_norm": float("nan"), "learning_rate": 1e-4, "epoch": step / 4}
            self.state.log_history.append(dict(logs, step=step))
            for cb in self.callbacks:
                cb.on_log(self.args, self.state, None, logs=logs)
        strategy = getattr(self.args, "evaluation_strategy" if _old else "eval_strategy")
        if self.eval and strategy:
            self.state.log_history.append({"eval_loss": 0.75, "epoch": 1.0, "step": steps})
        return _Output({"train_loss": 1.04, "train_runtime": 2.5, "epoch": 1.0, "total_flos": 1e12})

    def evaluate(self):
        return {"eval_loss": 0.7, "eval_runtime": 0.5}

    def save_model(self, path):
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "adapter_config.json"), "w") as f:
            json.dump({"peft_type": "LORA", "r": self.peft.kwargs["r"], "lora_alpha": self.peft.kwargs["lora_alpha"]}, f)
        with open(os.path.join(path, "adapter_model.safetensors"), "wb") as f:
            f.write(b"weights")

    def is_world_process_zero(self):
        return True
