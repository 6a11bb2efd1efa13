// Package local is the fine-tuning backend that runs a LoRA trainer
// (package finetune/trainer: TRL or LLaMA-Factory) as a process on this
// machine.
//
// Submit writes the trainer's configuration and its script (train.sh) into
// the job directory and starts `sh train.sh` there, in a process group of
// its own, with standard output and error going to train.log. It does not
// wait: the trainer outlives distill, and any process can follow it from
// the recorded State, whose Data holds the process group, the host, and
// what tells the process from a later one with the same id (its start time
// and the boot id on Linux).
//
// How a job ended is learnt across processes from two things: the script
// records the trainer's exit status in train.exit (written whole, by
// rename) after the trainer has ended, and the process group is gone once
// every process of the job has ended. Status reads train.exit first; if
// there is none and the group is gone, the trainer was killed. An exit
// status of 0 counts as success only with a usable adapter
// (trainer.CheckAdapter). Progress comes from train.log (trainer.ReadLog).
//
// Cancel sends SIGTERM to the whole group (the trainer's own children, data
// loader workers say, included), records the request in State.Data, and
// waits a little for the group to go. A trainer still running when Grace
// has passed since the request gets SIGKILL, from Cancel or from a later
// Status, which reports the job cancelled once the group is gone.
//
// On Linux a process group counts as alive while it has a process that is
// not a zombie, so that a container whose init does not reap orphans does
// not keep a finished job running.
package local
