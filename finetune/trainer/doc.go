// Package trainer sets up the LoRA trainers that the local and slurm
// fine-tuning backends run, and reads what those trainers leave behind.
//
// Data flows through a job's directory (finetune.Job.Dir), which the
// trainer runs in:
//
//  1. Prepare writes the trainer's configuration from the job: for
//     LLaMA-Factory a YAML file (train.yaml) read by
//     `llamafactory-cli train train.yaml`; for TRL the script train_sft.py
//     (kept in this package and embedded) and its JSON configuration
//     (train_config.json), run as `python3 train_sft.py train_config.json`.
//     It returns a Plan: the command, and the adapter's directory.
//  2. A backend runs Plan.Script (a POSIX sh script, written as train.sh):
//     it exports the plan's environment, runs the command with the job
//     directory as working directory, and then records the command's exit
//     status in ExitFile, so that any process, not only the trainer's
//     parent, learns how it ended. Backends send the script's output to
//     LogFile.
//  3. ReadLog turns the log into progress (ParseProgress reads one line:
//     train_sft.py's DISTILL_PROGRESS and DISTILL_DONE lines, the Hugging
//     Face Trainer's logged dicts and its tqdm step counter), the last
//     lines (for failure messages) and the final metrics.
//  4. ReadExit reads the exit status, and Result checks the adapter
//     (CheckAdapter) and builds the finetune.Result of a successful job.
//
// All paths a plan and its files hold are relative to the job directory,
// so that a job directory can be moved or mounted elsewhere (a cluster
// node) as a whole.
package trainer
