# Stand-in for transformers, for TestTrainSFTScript. The tokenizer counts
# one token per word of each message (and two per message for the chat
# format); its chat template is TEMPLATE, or none with STUB_NO_TEMPLATE=1.
# STUB_OLD_TRL=1 also makes it an old transformers, whose from_pretrained
# takes torch_dtype.
import os

TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"


class TrainerCallback:
    pass


class _Tokenizer:
    def __init__(self, name, kwargs):
        self.name, self.kwargs = name, kwargs
        self.chat_template = None if os.environ.get("STUB_NO_TEMPLATE") else TEMPLATE

    def apply_chat_template(self, messages, tokenize=False):
        assert tokenize
        return [0] * sum(2 + len(m["content"].split()) for m in messages)


class AutoTokenizer:
    @staticmethod
    def from_pretrained(name, **kwargs):
        return _Tokenizer(name, kwargs)


if os.environ.get("STUB_OLD_TRL"):
    class AutoModelForCausalLM:
        @staticmethod
        def from_pretrained(name, gguf_file=None, torch_dtype=None):
            return {"name": name, "gguf_file": gguf_file, "dtype": torch_dtype}
else:
    class AutoModelForCausalLM:
        @staticmethod
        def from_pretrained(name, gguf_file=None, dtype=None):
            return {"name": name, "gguf_file": gguf_file, "dtype": dtype}
