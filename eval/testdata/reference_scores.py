"""Writes reference_scores.json: EM, F1, precision and recall of predictions
against gold answers, computed in Python 3 the way the reference evaluation
scripts compute them, for eval's TestScoreAnswerMatchesReference.

Run from eval/testdata: python3 reference_scores.py > reference_scores.json
Each case is [prediction, golds, em, f1_reference, f1_squad, precision, recall];
precision and recall (reference scoring) belong to the first gold answer with
the best F1.
"""
import collections
import json
import random
import re
import string


def normalize(s):
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def token_scores(pred, gold, empty_is_match):
    p, g = normalize(pred).split(), normalize(gold).split()
    if empty_is_match and not p and not g:
        return 1.0, 1.0, 1.0
    common = collections.Counter(g) & collections.Counter(p)
    same = sum(common.values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision = 1.0 * same / len(p)
    recall = 1.0 * same / len(g)
    return (2 * precision * recall) / (precision + recall), precision, recall


def case(pred, golds):
    em = float(any(normalize(pred) == normalize(g) for g in golds))
    best = (0.0, 0.0, 0.0)
    for g in golds:
        s = token_scores(pred, g, True)
        if s[0] > best[0]:
            best = s
    squad = max([token_scores(pred, g, False)[0] for g in golds] or [0.0])
    return [pred, golds, em, best[0], squad, best[1], best[2]]


HAND = [
    ("the", ["a"]), ("", [""]), ("", ["the"]), ("a an the", ["..."]),
    ("", ["Paris"]), ("Paris", [""]), ("Paris", ["Paris"]),
    ("The Beatles", ["beatles"]), ("New York", ["New York City"]),
    ("the cat sat on the mat", ["a cat on a mat"]), ("Paris Paris", ["Paris"]),
    ("in 1912 probably", ["1912", "April 1912"]), ("John Smith", ["Smith", "John Smith Jr"]),
    ("yes", ["no"]), ("no", ["no"]), ("“Paris”", ["Paris"]), ("1990–1995", ["1990 1995"]),
    ("x", ["x y", "y x z"]), ("a b c d e f g", ["g f e", "a b c d e f g h i j k"]),
]

WORDS = ["the", "a", "an", "cat", "Cat", "sat", "mat", "on", "1912", "April", "New",
         "York", "city", "U.S.", "rock-and-roll", "café", "CAFÉ", "x", "y", "z", "",
         "Paris", "paris!", "of", "The"]


def random_answer(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 7)))


def main():
    rng = random.Random(16)
    cases = [case(p, g) for p, g in HAND]
    for _ in range(400):
        golds = [random_answer(rng) for _ in range(rng.randint(1, 3))]
        cases.append(case(random_answer(rng), golds))
    print("[\n" + ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n]")


main()
