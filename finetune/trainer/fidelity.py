"""Does a served LoRA judge give the verdicts of the model that was trained?

The trained model (PEFT, in transformers) and the adapter served by
llama.cpp over a GGUF base are asked the first N prompts of a training
export (greedy, no grammar, no repeat penalty), and their verdicts
("sufficient" true or false, and whether gap items follow) are compared.
Each side runs in its own Python (transformers and llama.cpp live in
different virtual environments here); each prints one JSON line:

    TRAIN_PY fidelity.py hf BASE_DIR ADAPTER_DIR VAL.jsonl N > hf.json
    MODELS_PY fidelity.py gguf BASE.gguf ADAPTER.gguf VAL.jsonl N > gguf.json
    python3 fidelity.py compare hf.json gguf.json [more.json ...]

VAL.jsonl is distill train's OUT/data/val.jsonl (OpenAI chat lines, the
teacher's label last); ADAPTER.gguf is what scripts/local-models start
--adapter converts (OUT/adapter.gguf).
"""

import json
import os
import re
import sys

MAX_TOKENS = 14  # enough for {"sufficient":false,"gap_items":[{"category"


def verdict(text):
    m = re.search(r'"sufficient"\s*:\s*(true|false)', text)
    return (m.group(1) if m else "?") + ("+gaps" if '"category"' in text else "")


def examples(path, n):
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r["messages"] for r in rows[:n]]


def run_hf(base, adapter, path, n):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(base)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16), adapter).eval()
    out = []
    for msgs in examples(path, n):
        ids = tok.apply_chat_template(msgs[:-1], add_generation_prompt=True, return_tensors="pt")
        if hasattr(ids, "keys"):
            ids = ids["input_ids"]
        with torch.no_grad():
            gen = model.generate(ids, max_new_tokens=MAX_TOKENS, do_sample=False)
        out.append(verdict(tok.decode(gen[0][ids.shape[1]:], skip_special_tokens=True)))
    return out


def run_gguf(base, adapter, path, n):
    from llama_cpp import Llama

    llm = Llama(model_path=base, lora_path=adapter, n_ctx=4096, n_threads=os.cpu_count(), verbose=False)
    out = []
    for msgs in examples(path, n):
        r = llm.create_chat_completion(messages=msgs[:-1], max_tokens=MAX_TOKENS, temperature=0, repeat_penalty=1.0)
        out.append(verdict(r["choices"][0]["message"]["content"]))
    return out


def compare(paths):
    runs = [json.load(open(p, encoding="utf-8")) for p in paths]
    ref = runs[0]
    labels = [verdict(m[-1]["content"]) for m in examples(ref["data"], ref["n"])]
    same = lambda a, b: sum(x.split("+")[0] == y.split("+")[0] for x, y in zip(a, b))
    print("| model | prompts | verdict as the trained model's | verdict and gap items as its | verdict as the label |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for r in runs:
        o = r["verdicts"]
        print(f"| {r['model']} | {len(o)} | {same(o, ref['verdicts'])} | {sum(a == b for a, b in zip(o, ref['verdicts']))} "
              f"| {same(o, labels)} |")


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "compare":
        compare(sys.argv[2:])
        return
    if len(sys.argv) != 6 or sys.argv[1] not in ("hf", "gguf"):
        sys.exit(__doc__)
    mode, base, adapter, path, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    run = run_hf if mode == "hf" else run_gguf
    name = "trained (transformers, bf16)" if mode == "hf" else os.path.basename(base) + " + adapter (llama.cpp)"
    print(json.dumps({"model": name, "data": os.path.abspath(path), "n": n, "verdicts": run(base, adapter, path, n)}))


if __name__ == "__main__":
    main()
