# Stand-in for torch, for TestTrainSFTScript: only what train_sft.py names.
bfloat16 = "torch.bfloat16"
float32 = "torch.float32"


class cuda:
    @staticmethod
    def is_available():
        return False
