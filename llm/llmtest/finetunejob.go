package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The life of a fine-tuning job, one step per poll: validation of its
// files, then running with metrics events, then the end (see finetune.go).

// advance moves j one poll on; s.mu is held.
func (s *Server) advance(j *fineTuneJob) {
	now := time.Now().Unix()
	switch j.status {
	case ftValidating:
		bad := s.checkTrainingFile(j)
		if bad == "" && strings.Contains(j.model, "fail") {
			bad = "the base model " + j.model + " asks this server to fail the job"
		}
		if bad != "" {
			param := "training_file"
			j.err = &fineTuneError{
				Code:    "invalid_training_file",
				Message: "The job failed due to an invalid training file: " + bad + ".",
				Param:   &param,
			}
			j.status, j.finishedAt = ftFailed, now
			s.event(j, "error", "message", j.err.Message, nil)
			return
		}
		j.status = ftQueued
		s.event(j, "info", "message", "Files validated, moving job to queued state", nil)
	case ftQueued:
		j.status = ftRunning
		j.totalSteps = max(1, (j.examples+j.batchSize-1)/j.batchSize*j.nEpochs)
		s.event(j, "info", "message", "Fine-tuning job started", nil)
	case ftRunning:
		j.running++
		polls := s.opts.FineTunePolls
		if polls <= 0 {
			polls = 2
		}
		switch {
		case strings.Contains(j.model, "slow"):
			// Creep on, never reaching the end.
			s.steps(j, min(j.step+1, j.totalSteps-1))
		case j.running < polls:
			s.steps(j, max(j.step, j.totalSteps*j.running/polls))
		default:
			s.steps(j, j.totalSteps)
			s.succeed(j, now)
		}
	}
}

// checkTrainingFile reads the job's files, returning what is wrong with
// them ("" when nothing is); s.mu is held.
func (s *Server) checkTrainingFile(j *fineTuneJob) string {
	for _, id := range []string{j.trainingFile, j.validationFile} {
		if id == "" {
			continue
		}
		examples, tokens := 0, 0
		for n, line := range bytes.Split(s.files[id].data, []byte("\n")) {
			if line = bytes.TrimSpace(line); len(line) == 0 {
				continue
			}
			var ex struct {
				Messages []Message `json:"messages"`
			}
			if err := json.Unmarshal(line, &ex); err != nil {
				return fmt.Sprintf("file %s, line %d is not a JSON object", id, n+1)
			}
			if len(ex.Messages) == 0 {
				return fmt.Sprintf("file %s, line %d has no messages", id, n+1)
			}
			for _, m := range ex.Messages {
				switch m.Role {
				case "system", "user", "assistant", "tool", "developer":
				default:
					return fmt.Sprintf("file %s, line %d has a message with role %q", id, n+1, m.Role)
				}
				tokens += words(m.Content)
			}
			examples++
		}
		if examples == 0 {
			return "file " + id + " has no examples"
		}
		if id == j.trainingFile {
			j.examples, j.tokens = examples, tokens
		}
	}
	return ""
}

// loss is the training loss the server reports at step.
func loss(step, total int) float64 {
	x := 0.2 + 1.8*math.Exp(-3*float64(step)/float64(total))
	return math.Round(x*1e4) / 1e4
}

func accuracy(step, total int) float64 {
	return math.Round((0.5+0.45*float64(step)/float64(total))*1e4) / 1e4
}

// steps reports progress up to step target as metrics events, at most
// maxMetricsPerPoll of them; s.mu is held.
func (s *Server) steps(j *fineTuneJob, target int) {
	n := target - j.step
	if n <= 0 {
		return
	}
	stride := (n + maxMetricsPerPoll - 1) / maxMetricsPerPoll
	for st := j.step + stride; ; st += stride {
		st = min(st, target)
		data := map[string]any{
			"step": st, "total_steps": j.totalSteps,
			"train_loss": loss(st, j.totalSteps), "train_mean_token_accuracy": accuracy(st, j.totalSteps),
		}
		msg := fmt.Sprintf("Step %d/%d: training loss=%.4f", st, j.totalSteps, loss(st, j.totalSteps))
		if j.validationFile != "" && st == j.totalSteps {
			// Validation loss a little above training loss.
			v := math.Round(loss(st, j.totalSteps)*1.1*1e4) / 1e4
			data["valid_loss"] = v
			msg += fmt.Sprintf(", validation loss=%.4f", v)
		}
		s.event(j, "info", "metrics", msg, data)
		if st == target {
			break
		}
	}
	j.step = target
}

// succeed ends j well; s.mu is held.
func (s *Server) succeed(j *fineTuneJob, now int64) {
	var csv strings.Builder
	csv.WriteString("step,train_loss,train_accuracy\n")
	for st := 1; st <= j.totalSteps; st++ {
		fmt.Fprintf(&csv, "%d,%.4f,%.4f\n", st, loss(st, j.totalSteps), accuracy(st, j.totalSteps))
	}
	if s.files == nil {
		s.files = map[string]*file{}
		s.batches = map[string]*batch{}
	}
	res := s.storeFile(&file{name: "step_metrics.csv", purpose: "fine-tune-results", created: now, data: []byte(csv.String())})
	j.resultFiles = append(j.resultFiles, res)
	short := strings.TrimPrefix(j.id, "ftjob-")
	j.fineTunedModel = "ft:" + j.model + ":distill-test:" + j.suffix + ":" + short
	j.trainedTokens = j.tokens * j.nEpochs
	j.status, j.finishedAt = ftSucceeded, now
	s.event(j, "info", "message", "Checkpoint created at step "+strconv.Itoa(j.totalSteps), nil)
	s.event(j, "info", "message", "New fine-tuned model created", map[string]any{"fine_tuned_model": j.fineTunedModel})
	s.event(j, "info", "message", "The job has successfully completed", nil)
}
