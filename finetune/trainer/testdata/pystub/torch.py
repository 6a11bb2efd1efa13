# Stand-in for torch, for TestTrainSFTScript: only the dtypes train_sft.py names.
bfloat16 = "torch.bfloat16"
float32 = "torch.float32"
