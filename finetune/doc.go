// Package finetune turns filtered labels into a trained judge: it exports
// supervised fine-tuning data and drives training jobs on real backends to
// their end. It is the library behind `distill train`.
//
// Export writes the training and validation examples (prompt: the judge's
// input exactly as the loop renders it; completion: the teacher's verdict
// as JSON) in the formats trainers read. A Backend runs a Job somewhere and
// reports its State; every backend keeps the contract written on Backend
// and passes the conformance suite in finetunetest:
//
//	openai   the fine-tuning API of OpenAI and of servers that copy it
//	local    a LoRA trainer process on this machine (package trainer)
//	slurm    the same trainer as a Slurm batch job
//	builtin  the built-in judge, trained on this CPU in seconds
//
// Run is the whole of `distill train` in one call: it exports the labels
// into the job's directory, submits the job, follows it to its end (Follow
// polls it, with its progress) and writes the hand-back, or re-attaches to
// the job the directory records. The job's state is kept there (job.json),
// so that status and cancel work from any process; a job that succeeded
// hands back model.json (HandBack), which says what was trained and how to
// serve and use it.
package finetune
