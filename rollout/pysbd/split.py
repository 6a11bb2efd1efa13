# The sentence splitter of distill's --splitter pysbd (rollout/pysbd): one
# process, requests on standard input, answers on standard output, a JSON
# object a line each way. It first writes {"pysbd": VERSION}; then each
# request {"texts": [...]} is answered {"sentences": [[...], ...]}, a list
# of sentences a text, or {"error": "..."}. A text is cut into paragraphs
# at blank lines and each paragraph split by pysbd (English, clean=False),
# as the authors' code splits a document; sentences are stripped of white
# space and empty ones left out.
import json
import re
import sys

try:
    import pysbd
except ImportError as e:
    sys.stdout.write(json.dumps({"error": "pysbd is not installed for %s: %s" % (sys.executable, e)}) + "\n")
    sys.stdout.flush()
    sys.exit(0)

segmenter = pysbd.Segmenter(language="en", clean=False)
blank_line = re.compile(r"\n[ \t\r\f\v]*\n")


def split(text):
    out = []
    for paragraph in blank_line.split(text):
        if not paragraph.strip():
            continue
        for sentence in segmenter.segment(paragraph):
            sentence = sentence.strip()
            if sentence:
                out.append(sentence)
    return out


sys.stdout.write(json.dumps({"pysbd": getattr(pysbd, "__version__", "unknown")}) + "\n")
sys.stdout.flush()
for line in sys.stdin:
    try:
        texts = json.loads(line)["texts"]
        answer = {"sentences": [split(t) for t in texts]}
    except Exception as e:  # a bad request is answered, not fatal
        answer = {"error": "%s: %s" % (type(e).__name__, e)}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
