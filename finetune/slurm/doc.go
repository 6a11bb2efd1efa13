// Package slurm is the fine-tuning backend that runs a LoRA trainer
// (package finetune/trainer: TRL or LLaMA-Factory) as a Slurm batch job.
//
// The job directory must be on a file system that the compute nodes share
// with the machine that submits. Submit writes the trainer's configuration
// and job.sbatch into it: #SBATCH directives (job name, --output=train.log
// in the job directory, GPUs, time, partition, account, CPUs, memory, and
// any extra lines), a cd to the job directory, and the trainer's script
// (trainer.Plan.Script), which also records the trainer's exit status in
// train.exit. It submits with `sbatch --parsable job.sbatch` and keeps the
// Slurm job id (and cluster, for -M) in the State.
//
// Status asks `squeue -h -j ID -o %T` while the job is queued or running;
// once squeue no longer knows it, `sacct -n -X -j ID -o State,ExitCode -P`
// says how it ended:
//
//	PENDING, CONFIGURING, REQUEUED...     queued
//	RUNNING, COMPLETING, SUSPENDED...     running
//	COMPLETED                             succeeded, if the adapter is usable
//	FAILED, TIMEOUT, OUT_OF_MEMORY,
//	NODE_FAIL, PREEMPTED...               failed, with the state as reason
//	CANCELLED (by ...)                    cancelled
//
// Where accounting is off (sacct fails or knows nothing), train.exit
// decides. Progress comes from train.log (trainer.ReadLog). Cancel runs
// `scancel ID`, which Slurm carries out by itself; the job is reported
// cancelled at once.
//
// The commands are run by name (Options), so that tests and unusual sites
// can put others in their place.
package slurm
