package trainer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/distill-rag/distill/finetune"
)

// Progress is what one log line, or a whole log (ReadLog), says about
// training.
type Progress struct {
	// Step and TotalSteps count optimiser steps (0 when not said).
	Step, TotalSteps int
	// Loss is the training loss (0 when not said).
	Loss float64
	// Metrics are the numbers reported besides the step counter: losses,
	// learning rate, epoch, and at the end train_loss, eval_loss,
	// train_runtime...
	Metrics map[string]float64
	// Done: the line is train_sft.py's DISTILL_DONE, printed once the
	// adapter is saved; its Metrics are the final ones.
	Done bool
	// Bar: the line is a tqdm progress bar, whose counter may be another
	// loop's than training's (evaluation has its own bar).
	Bar bool
}

// The tags of train_sft.py's machine-readable lines.
const (
	progressTag = "DISTILL_PROGRESS"
	doneTag     = "DISTILL_DONE"
)

var (
	// A Hugging Face Trainer log dict, as Python prints it:
	// {'loss': 1.2345, 'grad_norm': 0.87, 'learning_rate': 9.5e-05, 'epoch': 0.5}.
	// Values may come wrapped (np.float64(0.87), tensor(0.87, device='cuda:0'))
	// or, from transformers 5 on, as formatted strings ('0.87').
	dictRE = regexp.MustCompile(`'([A-Za-z_][A-Za-z0-9_/]*)':\s*(?:[A-Za-z_][A-Za-z0-9_.]*\()?\s*'?([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf)\b`)
	// tqdm's bar: "  4%|▍         | 12/300 [00:10<04:00,  1.20s/it]" or
	// " 12/300 [00:10<...". No description: the bars of data preparation
	// have one ("Map: 100%|...").
	barRE = regexp.MustCompile(`^\s*(?:\d+%\|[^|]*\|\s*)?(\d+)/(\d+)\s*\[([^\]]*)\]?`)
	// The Trainer's final summary lines: "  train_loss               =     0.8123".
	summaryRE = regexp.MustCompile(`^\s+((?:train|eval)_[A-Za-z0-9_]+|epoch)\s+=\s+([-+]?\d+\.?\d*(?:[eE][-+]?\d+)?)\s*$`)
)

// ParseProgress reads one line of a trainer's log: train_sft.py's
// DISTILL_PROGRESS and DISTILL_DONE lines, the dicts that the Hugging Face
// Trainer (so also LLaMA-Factory) prints at each logging step and at the
// end, its "key = value" metrics summary, and tqdm's step counter. ok is
// false for any other line.
func ParseProgress(line string) (Progress, bool) {
	line = strings.TrimRight(line, "\r\n")
	s := strings.TrimSpace(line)
	for _, tag := range []string{progressTag, doneTag} {
		if rest, ok := cutTag(s, tag); ok {
			return parseTagged(strings.TrimSpace(rest), tag == doneTag)
		}
	}
	if strings.Contains(s, "{'") {
		var p Progress
		for _, m := range dictRE.FindAllStringSubmatch(s, -1) {
			if v, err := strconv.ParseFloat(m[2], 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
				p.add(m[1], v)
			}
		}
		// Other dicts get printed too (a generation config): the
		// Trainer's have an epoch, or a loss.
		for _, k := range []string{"epoch", "loss", "eval_loss", "train_loss"} {
			if _, ok := p.Metrics[k]; ok {
				return p, true
			}
		}
		return Progress{}, false
	}
	if m := summaryRE.FindStringSubmatch(line); m != nil {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Progress{}, false
		}
		return Progress{Metrics: map[string]float64{m[1]: v}}, true
	}
	if m := barRE.FindStringSubmatch(line); m != nil {
		// Training counts iterations ("it/s" or "s/it", "?it/s" at 0).
		if m[3] != "" && !strings.Contains(m[3], "it/s") && !strings.Contains(m[3], "s/it") {
			return Progress{}, false
		}
		n, err1 := strconv.Atoi(m[1])
		total, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil || total == 0 || n > total {
			return Progress{}, false
		}
		return Progress{Step: n, TotalSteps: total, Bar: true}, true
	}
	return Progress{}, false
}

// cutTag returns what follows tag in s when s holds it as a word: at the
// start, or after a tqdm bar that was drawn without a newline (the bar's
// "\r" comes first, and the line printed after it joins the bar's).
func cutTag(s, tag string) (string, bool) {
	i := strings.Index(s, tag)
	if i < 0 {
		return "", false
	}
	if i > 0 {
		c := s[i-1]
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			return "", false
		}
	}
	rest := s[i+len(tag):]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return "", false
	}
	return rest, true
}

// parseTagged reads the JSON object of a DISTILL_ line.
func parseTagged(obj string, done bool) (Progress, bool) {
	var fields map[string]any
	if err := json.Unmarshal([]byte(obj), &fields); err != nil {
		return Progress{}, false
	}
	p := Progress{Done: done}
	for k, v := range fields {
		f, ok := v.(float64)
		if !ok {
			continue
		}
		switch k {
		case "step":
			p.Step = int(f)
		case "total_steps":
			p.TotalSteps = int(f)
		default:
			p.add(k, f)
		}
	}
	if p.Step < 0 || p.TotalSteps < 0 {
		return Progress{}, false
	}
	if done && p.Metrics == nil {
		p.Metrics = map[string]float64{}
	}
	return p, true
}

func (p *Progress) add(key string, v float64) {
	if p.Metrics == nil {
		p.Metrics = map[string]float64{}
	}
	p.Metrics[key] = v
	if key == "loss" {
		p.Loss = v
	}
}

// progressOnly are the numbers of DISTILL_PROGRESS lines that say how far
// training is, not how it went: they are not kept among a log's metrics.
var progressOnly = map[string]bool{"elapsed_s": true, "eta_s": true}

// Log is what a trainer's log says so far.
type Log struct {
	// Progress is the latest step counter and loss, the metrics reported
	// (the last value of each), and whether the trainer said it was done.
	// Bar is unused.
	Progress
	// Tail are the last lines, progress bars left out.
	Tail []string
}

// scriptPrefix starts the line in which train_sft.py says why it failed
// (its fail).
const scriptPrefix = "train_sft: error: "

// TailLines is how many lines Log.Tail keeps.
const TailLines = 20

// ReadLog reads a trainer's log (train.log). A missing log is an empty
// one: the trainer has not started.
//
// The step counter comes from DISTILL_PROGRESS lines when there are any;
// otherwise from tqdm's bars, only those counting to the total of the first
// bar (training's; evaluation's bars count batches). Lines end at "\n" or
// "\r", as tqdm redraws its bar with "\r".
func ReadLog(path string) (Log, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return Log{}, nil
	}
	if err != nil {
		return Log{}, err
	}
	defer f.Close()
	return scanLog(f)
}

func scanLog(r io.Reader) (Log, error) {
	var (
		l        Log
		tagged   bool // a DISTILL_PROGRESS or DISTILL_DONE line was seen
		barTotal int
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	sc.Split(scanLines)
	for sc.Scan() {
		line := sc.Text()
		p, ok := ParseProgress(line)
		if !ok || !p.Bar {
			if strings.TrimSpace(line) != "" {
				if len(l.Tail) == TailLines {
					l.Tail = append(l.Tail[:0], l.Tail[1:]...)
				}
				l.Tail = append(l.Tail, line)
			}
		}
		if !ok {
			continue
		}
		switch {
		case p.Bar:
			if barTotal == 0 {
				barTotal = p.TotalSteps
			}
			if !tagged && p.TotalSteps == barTotal {
				l.Step, l.TotalSteps = p.Step, p.TotalSteps
			}
		case p.Step > 0 || p.TotalSteps > 0:
			tagged = true
			l.Step = p.Step
			if p.TotalSteps > 0 {
				l.TotalSteps = p.TotalSteps
			}
		case p.Done:
			tagged = true
		}
		if _, ok := p.Metrics["loss"]; ok {
			l.Loss = p.Loss
		}
		for k, v := range p.Metrics {
			if progressOnly[k] {
				continue
			}
			if l.Metrics == nil {
				l.Metrics = map[string]float64{}
			}
			l.Metrics[k] = v
		}
		l.Done = l.Done || p.Done
	}
	return l, sc.Err()
}

// scanLines splits at "\n", "\r\n" or a lone "\r".
func scanLines(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			return i + 2, data[:i], nil
		}
		if data[i] == '\r' && i+1 == len(data) && !atEOF {
			return 0, nil, nil // maybe "\r\n" split by the read
		}
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// Update returns st with the log's progress.
func (l Log) Update(st finetune.State) finetune.State {
	if l.Step > 0 || l.TotalSteps > 0 {
		st.Step, st.TotalSteps = l.Step, l.TotalSteps
	}
	if l.Loss != 0 {
		st.Loss = l.Loss
	}
	return st
}

// Explain returns why a job failed: reason, then the training script's
// own message when it gave one (its last "train_sft: error: " line), else the
// log's last lines (where a trainer prints its error).
func (l Log) Explain(reason string) string {
	for i := len(l.Tail) - 1; i >= 0; i-- {
		if msg, ok := strings.CutPrefix(l.Tail[i], scriptPrefix); ok {
			return reason + ": " + msg
		}
	}
	tail := l.Tail
	if len(tail) > 10 {
		tail = tail[len(tail)-10:]
	}
	if len(tail) == 0 {
		return reason
	}
	return reason + "; the log ends:\n" + strings.Join(tail, "\n")
}
