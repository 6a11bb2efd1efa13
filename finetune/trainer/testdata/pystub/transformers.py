# Stand-in for transformers, for TestTrainSFTScript.
class TrainerCallback:
    pass


class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(name, torch_dtype=None):
        return {"name": name, "dtype": torch_dtype}
