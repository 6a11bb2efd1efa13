package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// examples are the command lines that --help shows for each command, by
// its name under distill ("data import"). Every command has some
// (TestEveryCommandHasExamples).
var examples = map[string][]string{
	"data": {
		"distill data import --dataset sample --out runs/sample",
		"distill data show --count runs/sample/questions.parquet",
	},
	"data import": {
		"distill data import --dataset sample --out runs/sample",
		"distill data import --format hotpotqa --in hotpot_dev_distractor_v1.json --out runs/hotpot",
		"distill data import --format flashrag --name 2wikimultihopqa --in dev.jsonl --corpus corpus.jsonl --out runs/2wiki",
	},
	"data synth": {
		"distill data synth --seed 7 --count 5000 --out runs/synth",
	},
	"data show": {
		"distill data show -n 3 runs/sample/questions.parquet",
		"distill data show --count --schema runs/rollout/trajectories.parquet",
	},
	"index": {
		"distill index --corpus runs/sample/corpus.parquet --out runs/sample/bm25",
		"distill index --kind dense --corpus runs/sample/corpus.parquet --out runs/sample/e5 --embed-model intfloat/e5-base-v2 --embed-base-url http://localhost:8080/v1",
	},
	"search": {
		`distill search --index runs/sample/bm25 -k 5 "Which magazine was started first?"`,
		"distill search --index runs/sample/bm25 -k 100 --queries queries.tsv --format trec > run.trec",
	},
	"rollout": {
		"distill rollout --policy fixed --questions runs/sample/questions.parquet --index runs/sample/bm25 --out runs/rollout",
		"distill rollout ... --judge llm --judge-model MODEL --judge-base-url http://localhost:8000/v1",
		"distill rollout ... --resume",
	},
	"merge": {
		"distill merge --out runs/all runs/part0 runs/part1",
	},
	"label": {
		"distill label --in runs/rollout --teacher retrieval-truth --out runs/labels",
		"distill label --in runs/rollout --out runs/labels --teacher-model gpt-4o-mini --dry-run",
	},
	"filter": {
		"distill filter --in runs/labels --out runs/sft",
		"distill filter --in runs/labels --out runs/sft --balance --overwrite",
	},
	"train": {
		"distill train --in runs/sft --out runs/judge --backend builtin",
		"distill train --in runs/sft --out runs/judge-export --export-only",
	},
	"train status": {"distill train status runs/judge-lora"},
	"train cancel": {"distill train cancel runs/judge-lora"},
	"bench": {
		"distill bench --judge-from runs/judge --questions runs/sample/questions.parquet --index runs/sample/bm25 --out runs/bench",
		"distill bench ... --variants full,no-sft,no-judge --limit 1000 --resume",
	},
	"bench merge":   {"distill bench merge --out runs/bench --questions runs/hotpot/questions.parquet runs/bench-0 runs/bench-1"},
	"bench compare": {"distill bench compare runs/bench-a runs/bench-b"},
	"version":       {"distill version"},
	"run": {
		"distill run examples/sample.yaml",
		"distill run --dry-run examples/local-models.yaml",
		"distill run --from filter --force examples/sample.yaml",
	},
	"score": {
		"distill score --questions runs/hotpot/questions.parquet --predictions preds.jsonl",
		"distill score --questions hotpot_dev_distractor_v1.json --format hotpotqa --predictions preds.jsonl --per-question > scores.jsonl",
	},
}

// addExamples appends the examples of each of cmds, and of their
// subcommands, to its description; parent is the name of their parent
// ("" at the top).
func addExamples(cmds []*cli.Command, parent string) {
	for _, cmd := range cmds {
		name := strings.TrimSpace(parent + " " + cmd.Name)
		if ex := examples[name]; len(ex) > 0 && !strings.Contains(cmd.Description, "\nExamples:\n") {
			if cmd.Description != "" {
				cmd.Description += "\n\n"
			}
			cmd.Description += "Examples:\n   " + strings.Join(ex, "\n   ")
		}
		addExamples(cmd.Subcommands, name)
	}
}
