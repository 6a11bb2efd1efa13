#!/bin/sh
# Joins the shards of one array step once they are all done (submit with
# sbatch --dependency=afterok:ARRAY_JOBID slurm-merge.sh STEP).
#SBATCH --job-name=distill-merge
#SBATCH --output=logs/distill-merge-%j.log
#SBATCH --time=01:00:00
set -eu
STEP=${1:-rollout}
RUNS=${RUNS:-runs/hotpot}
case "$STEP" in
rollout) distill merge --out "$RUNS/rollout" "$RUNS"/rollout-[0-9]* ;;
label) distill merge --out "$RUNS/labels" "$RUNS"/labels-[0-9]* ;;
bench) distill bench merge --out "$RUNS/bench" --questions "$RUNS/dev-questions.parquet" "$RUNS"/bench-[0-9]* ;;
*) echo "unknown step $STEP" >&2; exit 2 ;;
esac
