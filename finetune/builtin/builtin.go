// Package builtin is the fine-tuning backend that trains on this CPU in
// seconds: a logistic regression over lexical features of (question,
// evidence) that predicts sufficiency, written as a judge.LinearModel that
// `--judge builtin:PATH` loads (judge.LoadLinear). It is a baseline:
// it makes the whole chain (rollout, label, filter, train, bench) run
// offline, and lets the "with versus without training" comparison be
// measured without a GPU. Its gap items come from the lexical judge.
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"path/filepath"
	"strings"
	"time"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/finetune"
	"github.com/distill-rag/distill/internal/lexical"
	"github.com/distill-rag/distill/judge"
)

// Name is the backend's name.
const Name = "builtin"

// ModelFile is where a job's model goes, under the job directory: where
// judge.LoadLinear looks for it in a training directory.
const ModelFile = judge.LinearModelFile

// LogFile is the job's log, under the job directory.
const LogFile = "train.log"

// Training settings: L2 strength, Newton iterations and their stopping
// tolerance, the decision threshold.
const (
	l2        = 1e-2
	maxIters  = 50
	tolerance = 1e-9
	threshold = 0.5
)

// Backend trains the built-in judge. The zero value is ready to use.
type Backend struct{}

var _ finetune.Backend = Backend{}

// Name implements finetune.Backend.
func (Backend) Name() string { return Name }

// Submit trains the model on job.Labels.Train (evaluating it on
// job.Labels.Val when given) and returns the ended job: succeeded with
// the model file, or failed when the data cannot train it (no examples, one
// class only).
func (Backend) Submit(ctx context.Context, job finetune.Job) (finetune.State, error) {
	now := time.Now().UTC()
	st := finetune.State{Backend: Name, ID: "builtin-" + now.Format("20060102T150405.000000000"), Status: finetune.StatusRunning,
		LogPath: LogFile, SubmittedAt: now, UpdatedAt: now}
	var log strings.Builder
	logf := func(format string, args ...any) { fmt.Fprintf(&log, format+"\n", args...) }
	m, metrics, err := train(ctx, job, logf)
	if ctx.Err() != nil {
		return st, ctx.Err()
	}
	st.FinishedAt = time.Now().UTC()
	st.UpdatedAt = st.FinishedAt
	if err != nil {
		st.Status, st.Message = finetune.StatusFailed, err.Error()
		logf("failed: %v", err)
	} else {
		b, merr := json.MarshalIndent(m, "", "  ")
		if merr != nil {
			return st, merr
		}
		if err := data.WriteFileAtomic(filepath.Join(job.Dir, ModelFile), append(b, '\n')); err != nil {
			return st, err
		}
		st.Status = finetune.StatusSucceeded
		st.Result = &finetune.Result{ModelFile: ModelFile, Metrics: metrics}
		st.Step, st.TotalSteps, st.Loss = int(metrics["iterations"]), int(metrics["iterations"]), metrics["train_loss"]
		logf("model written to %s", ModelFile)
	}
	if err := data.WriteFileAtomic(filepath.Join(job.Dir, LogFile), []byte(log.String())); err != nil {
		return st, err
	}
	return st, nil
}

// Status implements finetune.Backend: a built-in job has ended when
// Submit returns.
func (Backend) Status(_ context.Context, _ finetune.Job, st finetune.State) (finetune.State, error) {
	return st, nil
}

// Cancel implements finetune.Backend: there is nothing left to cancel.
func (Backend) Cancel(_ context.Context, _ finetune.Job, st finetune.State) (finetune.State, error) {
	return st, nil
}

// ErrData is the cause of a job that failed on its data.
var ErrData = errors.New("cannot train on this data")

// set is the features and targets of a split.
type set struct {
	x [][]float64
	y []float64
}

// readSet reads the features and targets of a filtered labels file, in
// its order. The features of each batch of rows are computed on every
// core: they are most of the reading's work.
func readSet(ctx context.Context, path string) (set, error) {
	var s set
	workers := runtime.GOMAXPROCS(0)
	err := data.EachRow(ctx, path, data.KindLabels, func(rows []data.Label) error {
		for _, l := range rows {
			if l.DropRule != "" || l.Failure != "" {
				return fmt.Errorf("%s: state %s round %d is not a kept label: give the output of distill filter", path, l.QuestionID, l.Round)
			}
			y := 0.0
			if l.Sufficient {
				y = 1
			}
			s.y = append(s.y, y)
		}
		base := len(s.x)
		s.x = append(s.x, make([][]float64, len(rows))...)
		var wg sync.WaitGroup
		chunk := (len(rows) + workers - 1) / workers
		for lo := 0; lo < len(rows); lo += chunk {
			hi := min(lo+chunk, len(rows))
			wg.Go(func() {
				for i := lo; i < hi; i++ {
					s.x[base+i] = lexical.Features(rows[i].Question, rows[i].Evidence)
				}
			})
		}
		wg.Wait()
		return nil
	})
	return s, err
}

// train fits the model and measures it.
func train(ctx context.Context, job finetune.Job, logf func(string, ...any)) (judge.LinearModel, map[string]float64, error) {
	if job.Labels.Train == "" {
		return judge.LinearModel{}, nil, fmt.Errorf("%w: the job names no training labels", ErrData)
	}
	tr, err := readSet(ctx, job.Labels.Train)
	if err != nil {
		return judge.LinearModel{}, nil, err
	}
	pos := 0
	for _, y := range tr.y {
		pos += int(y)
	}
	logf("train: %d examples, %d sufficient, %d features", len(tr.y), pos, len(lexical.FeatureNames()))
	if pos == 0 || pos == len(tr.y) {
		return judge.LinearModel{}, nil, fmt.Errorf("%w: %d examples, %d of them sufficient: both classes are needed", ErrData, len(tr.y), pos)
	}
	m := standardise(tr)
	iters, loss := fit(&m, tr, logf)
	metrics := map[string]float64{"iterations": float64(iters), "train_loss": loss, "train_examples": float64(len(tr.y))}
	for k, v := range evaluate(m, tr) {
		metrics["train_"+k] = v
	}
	if job.Labels.Val != "" {
		va, err := readSet(ctx, job.Labels.Val)
		if err != nil {
			return m, nil, err
		}
		if len(va.y) > 0 {
			metrics["val_examples"] = float64(len(va.y))
			for k, v := range evaluate(m, va) {
				metrics["val_"+k] = v
			}
			logf("val: %d examples, accuracy %.4f, f1 %.4f", len(va.y), metrics["val_accuracy"], metrics["val_f1"])
		}
	}
	m.TemplateHash, m.DataHash, m.Metrics = job.Files.TemplateHash, job.Files.DataHash, metrics
	return m, metrics, m.Check()
}

// standardise returns a model with the features' means and deviations.
func standardise(s set) judge.LinearModel {
	names := lexical.FeatureNames()
	n := len(names)
	m := judge.LinearModel{Version: lexical.FeaturesVersion, Features: names,
		Mean: make([]float64, n), Std: make([]float64, n), Weights: make([]float64, n), Threshold: threshold}
	for _, x := range s.x {
		for j, v := range x {
			m.Mean[j] += v
		}
	}
	for j := range m.Mean {
		m.Mean[j] /= float64(len(s.x))
	}
	for _, x := range s.x {
		for j, v := range x {
			d := v - m.Mean[j]
			m.Std[j] += d * d
		}
	}
	for j := range m.Std {
		m.Std[j] = math.Sqrt(m.Std[j] / float64(len(s.x)))
		if m.Std[j] < 1e-12 {
			m.Std[j] = 1 // a constant feature: its weight stays 0 under L2
		}
	}
	return m
}

// fit runs Newton's method on the L2-regularised logistic loss (the bias
// unregularised) and returns the iterations and the final mean loss.
func fit(m *judge.LinearModel, s set, logf func(string, ...any)) (int, float64) {
	n := len(m.Weights) + 1 // the bias last
	z := make([][]float64, len(s.x))
	for i, x := range s.x {
		z[i] = make([]float64, n)
		for j, v := range x {
			z[i][j] = (v - m.Mean[j]) / m.Std[j]
		}
		z[i][n-1] = 1
	}
	w := make([]float64, n)
	loss := math.Inf(1)
	iters := 0
	for iters < maxIters {
		iters++
		grad := make([]float64, n)
		hess := make([][]float64, n)
		for j := range hess {
			hess[j] = make([]float64, n)
		}
		cur := 0.0
		for i, zi := range z {
			p := sigmoid(dot(w, zi))
			cur -= s.y[i]*math.Log(max(p, 1e-15)) + (1-s.y[i])*math.Log(max(1-p, 1e-15))
			for j := range n {
				grad[j] += (p - s.y[i]) * zi[j]
				for k := range n {
					hess[j][k] += p * (1 - p) * zi[j] * zi[k]
				}
			}
		}
		N := float64(len(z))
		for j := range n - 1 {
			cur += 0.5 * l2 * N * w[j] * w[j]
			grad[j] += l2 * N * w[j]
			hess[j][j] += l2 * N
		}
		hess[n-1][n-1] += 1e-9 * N
		cur /= N
		step := solve(hess, grad)
		for j := range n {
			w[j] -= step[j]
		}
		logf("iteration %d: loss %.6f", iters, cur)
		if math.Abs(loss-cur) < tolerance {
			loss = cur
			break
		}
		loss = cur
	}
	copy(m.Weights, w[:n-1])
	m.Bias = w[n-1]
	return iters, loss
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// solve solves a x = b by Gaussian elimination with partial pivoting (a is
// positive definite here); a and b are overwritten.
func solve(a [][]float64, b []float64) []float64 {
	n := len(b)
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		a[c], a[p] = a[p], a[c]
		b[c], b[p] = b[p], b[c]
		if a[c][c] == 0 {
			continue
		}
		for r := c + 1; r < n; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k < n; k++ {
				a[r][k] -= f * a[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < n; k++ {
			s -= a[r][k] * x[k]
		}
		if a[r][r] != 0 {
			x[r] = s / a[r][r]
		}
	}
	return x
}

// evaluate returns accuracy, precision, recall, F1 and the false positive
// rate of the model on a set (sufficient is the positive class).
func evaluate(m judge.LinearModel, s set) map[string]float64 {
	var tp, fp, fn, tn float64
	for i, x := range s.x {
		pred := m.Probability(x) >= m.Threshold
		switch {
		case pred && s.y[i] == 1:
			tp++
		case pred:
			fp++
		case s.y[i] == 1:
			fn++
		default:
			tn++
		}
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	p, r := ratio(tp, tp+fp), ratio(tp, tp+fn)
	return map[string]float64{
		"accuracy": ratio(tp+tn, tp+fp+fn+tn), "precision": p, "recall": r, "f1": ratio(2*p*r, p+r),
		"false_positive_rate": ratio(fp, fp+tn),
	}
}
