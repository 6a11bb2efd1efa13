# Stand-in for peft, for TestTrainSFTScript.
class LoraConfig:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
