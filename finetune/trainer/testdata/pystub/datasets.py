# Stand-in for datasets, for TestTrainSFTScript: the "parquet" files of the
# test hold one JSON object per line.
import json


class Dataset(list):
    def map(self, fn, remove_columns=()):
        out = Dataset()
        for ex in self:
            row = {k: v for k, v in ex.items() if k not in remove_columns}
            row.update(fn(ex))
            out.append(row)
        return out

    def filter(self, fn):
        return Dataset(ex for ex in self if fn(ex))

    def select(self, indices):
        return Dataset(self[i] for i in indices)


class DatasetDict(dict):
    def map(self, fn, remove_columns=()):
        return DatasetDict({k: v.map(fn, remove_columns) for k, v in self.items()})


def load_dataset(kind, data_files):
    assert kind == "parquet", kind
    out = DatasetDict()
    for split, path in data_files.items():
        with open(path, encoding="utf-8") as f:
            out[split] = Dataset(json.loads(line) for line in f if line.strip())
    return out
