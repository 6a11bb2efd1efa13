package trainer

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/distill-rag/distill/finetune"
)

func TestParseProgress(t *testing.T) {
	m := func(kv ...any) map[string]float64 {
		out := map[string]float64{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1].(float64)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		line string
		want Progress
		ok   bool
	}{
		{"distill progress", `DISTILL_PROGRESS {"step": 3, "total_steps": 30, "loss": 1.23}`,
			Progress{Step: 3, TotalSteps: 30, Loss: 1.23, Metrics: m("loss", 1.23)}, true},
		{"distill progress at start", `DISTILL_PROGRESS {"step": 0, "total_steps": 561}`,
			Progress{TotalSteps: 561}, true},
		{"distill progress with logs",
			`DISTILL_PROGRESS {"step": 10, "total_steps": 561, "loss": 0.8213, "grad_norm": 1.52, "learning_rate": 9.8e-05, "epoch": 0.05, "mean_token_accuracy": 0.81}`,
			Progress{Step: 10, TotalSteps: 561, Loss: 0.8213, Metrics: m("loss", 0.8213, "grad_norm", 1.52, "learning_rate", 9.8e-05, "epoch", 0.05, "mean_token_accuracy", 0.81)}, true},
		{"distill done", `DISTILL_DONE {"train_runtime": 1234.5, "train_loss": 0.61, "eval_loss": 0.58, "epoch": 3.0, "step": 561}`,
			Progress{Step: 561, Done: true, Metrics: m("train_runtime", 1234.5, "train_loss", 0.61, "eval_loss", 0.58, "epoch", 3.0)}, true},
		{"distill done empty", `DISTILL_DONE {}`, Progress{Done: true, Metrics: map[string]float64{}}, true},
		{"distill progress, leading space", "  DISTILL_PROGRESS {\"step\": 1}\r\n", Progress{Step: 1}, true},
		{"distill progress garbled", `DISTILL_PROGRESS {"step": 3,`, Progress{}, false},
		{"distill progress negative", `DISTILL_PROGRESS {"step": -3}`, Progress{}, false},
		{"distill prefix only", `DISTILL_PROGRESSIVE {"step": 3}`, Progress{}, false},
		{"distill progress after a tqdm bar", ` 12%|█▎        | 1/8 [00:35<04:08, 35.50s/it]DISTILL_PROGRESS {"step": 2, "total_steps": 8, "eta_s": 210.5, "loss": 1.4}`,
			Progress{Step: 2, TotalSteps: 8, Loss: 1.4, Metrics: m("eta_s", 210.5, "loss", 1.4)}, true},
		{"distill done after a tqdm bar", `100%|██████████| 8/8 [00:20<00:00,  2.51s/it]DISTILL_DONE {"train_loss": 0.9}`,
			Progress{Done: true, Metrics: m("train_loss", 0.9)}, true},
		{"tag inside a word", `XDISTILL_PROGRESS {"step": 3}`, Progress{}, false},
		{"hf log dict", `{'loss': 1.2345, 'grad_norm': 0.8765432, 'learning_rate': 9.5e-05, 'epoch': 0.5}`,
			Progress{Loss: 1.2345, Metrics: m("loss", 1.2345, "grad_norm", 0.8765432, "learning_rate", 9.5e-05, "epoch", 0.5)}, true},
		{"hf log dict with tokens", `{'loss': 0.6931, 'grad_norm': 2.1, 'learning_rate': 1e-05, 'epoch': 2.97, 'num_input_tokens_seen': 1234567}`,
			Progress{Loss: 0.6931, Metrics: m("loss", 0.6931, "grad_norm", 2.1, "learning_rate", 1e-05, "epoch", 2.97, "num_input_tokens_seen", 1234567.0)}, true},
		{"hf log dict, numpy and tensor values", `{'loss': 1.5, 'grad_norm': np.float64(0.87), 'entropy': tensor(2.5, device='cuda:0'), 'epoch': 1.0}`,
			Progress{Loss: 1.5, Metrics: m("loss", 1.5, "grad_norm", 0.87, "entropy", 2.5, "epoch", 1.0)}, true},
		{"hf log dict of transformers 5, values as strings", `{'loss': '3.884', 'grad_norm': '7.815', 'learning_rate': '0.0001', 'num_tokens': '1.107e+04', 'epoch': '0.002222'}`,
			Progress{Loss: 3.884, Metrics: m("loss", 3.884, "grad_norm", 7.815, "learning_rate", 0.0001, "num_tokens", 11070.0, "epoch", 0.002222)}, true},
		{"hf log dict nan", `{'loss': nan, 'grad_norm': nan, 'learning_rate': 0.0001, 'epoch': 0.1}`,
			Progress{Metrics: m("learning_rate", 0.0001, "epoch", 0.1)}, true},
		{"hf eval dict", `{'eval_loss': 0.5821, 'eval_runtime': 12.3, 'eval_samples_per_second': 40.6, 'eval_steps_per_second': 5.1, 'epoch': 1.0}`,
			Progress{Metrics: m("eval_loss", 0.5821, "eval_runtime", 12.3, "eval_samples_per_second", 40.6, "eval_steps_per_second", 5.1, "epoch", 1.0)}, true},
		{"hf train end dict", `{'train_runtime': 1834.2, 'train_samples_per_second': 4.9, 'train_steps_per_second': 0.306, 'train_loss': 0.7012, 'epoch': 3.0}`,
			Progress{Metrics: m("train_runtime", 1834.2, "train_samples_per_second", 4.9, "train_steps_per_second", 0.306, "train_loss", 0.7012, "epoch", 3.0)}, true},
		{"other dict", `{'bos_token_id': 128000, 'eos_token_id': 128009}`, Progress{}, false},
		{"summary line", `  train_loss               =     0.8123`, Progress{Metrics: m("train_loss", 0.8123)}, true},
		{"summary epoch", `  epoch                    =        3.0`, Progress{Metrics: m("epoch", 3.0)}, true},
		{"summary runtime", `  train_runtime            = 0:30:34.21`, Progress{}, false},
		{"summary other", `  total_flos               = 12345GF`, Progress{}, false},
		{"tqdm bar", "  4%|▍         | 12/300 [00:10<04:00,  1.20s/it]", Progress{Step: 12, TotalSteps: 300, Bar: true}, true},
		{"tqdm bar it/s", "100%|██████████| 300/300 [04:10<00:00,  1.20it/s]", Progress{Step: 300, TotalSteps: 300, Bar: true}, true},
		{"tqdm bar start", "  0%|          | 0/300 [00:00<?, ?it/s]", Progress{TotalSteps: 300, Bar: true}, true},
		{"tqdm counter only", " 12/300 [", Progress{Step: 12, TotalSteps: 300, Bar: true}, true},
		{"tqdm with postfix", " 45%|████▌     | 135/300 [01:40<02:03,  1.34it/s, loss=0.91]", Progress{Step: 135, TotalSteps: 300, Bar: true}, true},
		{"tqdm data bar", "Map: 100%|██████████| 1000/1000 [00:00<00:00, 5234.12 examples/s]", Progress{}, false},
		{"tqdm shards bar", "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]", Progress{}, false},
		{"tqdm examples unit", "100%|██████████| 1000/1000 [00:00<00:00, 5234.12 examples/s]", Progress{}, false},
		{"tqdm over", " 12/10 [00:00<00:00, 1.0it/s]", Progress{}, false},
		{"log line", "[INFO|trainer.py:2145] 2025-01-01 10:00:00,000 >> ***** Running training *****", Progress{}, false},
		{"blank", "", Progress{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ParseProgress(tc.line)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v (got %+v)", ok, tc.ok, got)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseProgress(f *testing.F) {
	for _, s := range []string{
		`DISTILL_PROGRESS {"step": 3, "total_steps": 30, "loss": 1.23}`,
		`DISTILL_DONE {"train_loss": 0.5}`,
		`{'loss': 1.2345, 'grad_norm': np.float64(0.5), 'learning_rate': 9.5e-05, 'epoch': 0.5}`,
		"  4%|▍         | 12/300 [00:10<04:00,  1.20s/it]",
		"  train_loss = 0.8",
		" 12/300 [",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		p, ok := ParseProgress(line)
		if !ok {
			if p.Step != 0 || p.TotalSteps != 0 || p.Metrics != nil || p.Done {
				t.Errorf("not ok, yet %+v", p)
			}
			return
		}
		if p.Step < 0 || p.TotalSteps < 0 || (p.Bar && p.Step > p.TotalSteps) {
			t.Errorf("counter out of range: %+v", p)
		}
		if p.Loss != p.Metrics["loss"] {
			t.Errorf("loss %v, metrics %v: want the metrics' loss", p.Loss, p.Metrics)
		}
		for k, v := range p.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("metric %s = %v", k, v)
			}
		}
	})
}

// A TRL run's log as train_sft.py leaves it: library noise, tqdm bars
// redrawn with "\r" (evaluation's bar too), the Trainer's dicts and the
// DISTILL lines.
const trlLog = "Loading checkpoint shards: 100%|██████████| 2/2 [00:03<00:00,  1.52s/it]\n" +
	"Map: 100%|██████████| 90/90 [00:00<00:00, 5234.12 examples/s]\n" +
	"DISTILL_PROGRESS {\"step\": 0, \"total_steps\": 18}\n" +
	"  0%|          | 0/18 [00:00<?, ?it/s]\r  6%|▌         | 1/18 [00:02<00:40,  2.40s/it]\r 11%|█         | 2/18 [00:04<00:36,  2.30s/it]\r" +
	"{'loss': 2.1, 'grad_norm': 3.2, 'learning_rate': 9e-05, 'epoch': 0.33}\n" +
	"DISTILL_PROGRESS {\"step\": 2, \"total_steps\": 18, \"loss\": 2.1, \"epoch\": 0.33}\n" +
	" 33%|███▎      | 6/18 [00:14<00:28,  2.35s/it]\r" +
	"\n  0%|          | 0/5 [00:00<?, ?it/s]\r 80%|████████  | 4/5 [00:01<00:00,  3.9it/s]\r" +
	"{'eval_loss': 1.9, 'eval_runtime': 1.5, 'epoch': 1.0}\n" +
	"DISTILL_PROGRESS {\"step\": 6, \"total_steps\": 18, \"eval_loss\": 1.9, \"epoch\": 1.0}\n" +
	" 39%|███▉      | 7/18 [00:17<00:28,  2.35s/it]\r"

// A run of today's train_sft.py (TRL 1.16): a progress line after every
// step, printed where tqdm left its bar, so that it joins the bar's line.
const trlStepLog = "DISTILL_PROGRESS {\"step\": 0, \"total_steps\": 3}\n" +
	"  0%|          | 0/3 [00:00<?, ?it/s]\r 33%|███▎      | 1/3 [00:30<01:00, 30.0s/it]" +
	"DISTILL_PROGRESS {\"step\": 1, \"total_steps\": 3, \"elapsed_s\": 30.0, \"eta_s\": 60.0}\n" +
	" 33%|███▎      | 1/3 [00:30<01:00, 30.0s/it]DISTILL_PROGRESS {\"step\": 1, \"total_steps\": 3, \"elapsed_s\": 30.0, \"eta_s\": 60.0, \"loss\": 1.4}\n" +
	"{'loss': '1.4', 'epoch': '0.01'}\n" +
	" 33%|███▎      | 1/3 [00:30<01:00, 30.0s/it]DISTILL_PROGRESS {\"step\": 2, \"total_steps\": 3, \"elapsed_s\": 58.0, \"eta_s\": 29.0, \"loss\": 1.1}\n" +
	"100%|██████████| 2/2 [00:10<00:00,  5.0s/it]\n" +
	"DISTILL_DONE {\"train_loss\": 1.25, \"eval_loss\": 1.0}\n"

// The same kind of run under LLaMA-Factory: no DISTILL lines.
const llamaFactoryLog = "[INFO|trainer.py:2145] 2025-01-01 10:00:00,000 >> ***** Running training *****\n" +
	"  0%|          | 0/18 [00:00<?, ?it/s]\r 11%|█         | 2/18 [00:04<00:36,  2.30s/it]\r" +
	"{'loss': 2.1, 'grad_norm': 3.2, 'learning_rate': 9e-05, 'epoch': 0.33, 'num_input_tokens_seen': 4096}\n" +
	" 33%|███▎      | 6/18 [00:14<00:28,  2.35s/it]\r" +
	"\n  0%|          | 0/5 [00:00<?, ?it/s]\r 80%|████████  | 4/5 [00:01<00:00,  3.9it/s]\r\n" +
	"{'eval_loss': 1.9, 'eval_runtime': 1.5, 'epoch': 1.0}\n" +
	" 39%|███▉      | 7/18 [00:17<00:28,  2.35s/it]\r" +
	"{'loss': 1.7, 'grad_norm': 2.2, 'learning_rate': 5e-05, 'epoch': 1.33}\r\n" +
	"100%|██████████| 18/18 [00:44<00:00,  2.30s/it]\r\n" +
	"{'train_runtime': 44.1, 'train_samples_per_second': 6.1, 'train_steps_per_second': 0.41, 'train_loss': 1.5, 'epoch': 3.0}\n" +
	"***** train metrics *****\n" +
	"  epoch                    =        3.0\n" +
	"  train_loss               =        1.5\n" +
	"  train_runtime            = 0:00:44.10\n"

func TestReadLog(t *testing.T) {
	for _, tc := range []struct {
		name, log string
		want      Progress
		tail      string // the last line of the tail
	}{
		{"trl", trlLog, Progress{Step: 6, TotalSteps: 18, Loss: 2.1,
			Metrics: map[string]float64{"loss": 2.1, "grad_norm": 3.2, "learning_rate": 9e-05, "epoch": 1.0, "eval_loss": 1.9, "eval_runtime": 1.5}},
			`DISTILL_PROGRESS {"step": 6, "total_steps": 18, "eval_loss": 1.9, "epoch": 1.0}`},
		{"trl per step", trlStepLog, Progress{Step: 2, TotalSteps: 3, Loss: 1.1, Done: true,
			Metrics: map[string]float64{"loss": 1.1, "epoch": 0.01, "train_loss": 1.25, "eval_loss": 1.0}},
			`DISTILL_DONE {"train_loss": 1.25, "eval_loss": 1.0}`},
		{"llamafactory", llamaFactoryLog, Progress{Step: 18, TotalSteps: 18, Loss: 1.7,
			Metrics: map[string]float64{"loss": 1.7, "grad_norm": 2.2, "learning_rate": 5e-05, "epoch": 3.0, "num_input_tokens_seen": 4096,
				"eval_loss": 1.9, "eval_runtime": 1.5, "train_runtime": 44.1, "train_samples_per_second": 6.1, "train_steps_per_second": 0.41, "train_loss": 1.5}},
			"  train_runtime            = 0:00:44.10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), LogFile)
			if err := os.WriteFile(path, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := ReadLog(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, l.Progress); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			if len(l.Tail) == 0 || l.Tail[len(l.Tail)-1] != tc.tail {
				t.Errorf("tail %q, want it to end with %q", l.Tail, tc.tail)
			}
			for _, line := range l.Tail {
				if strings.Contains(line, "it/s") && !strings.Contains(line, ":") {
					t.Errorf("a progress bar in the tail: %q", line)
				}
			}
			st := l.Update(finetune.State{Status: finetune.StatusRunning})
			if st.Step != tc.want.Step || st.TotalSteps != tc.want.TotalSteps || st.Loss != tc.want.Loss {
				t.Errorf("state %+v, want the log's progress", st)
			}
		})
	}
}

func TestReadLogDone(t *testing.T) {
	path := filepath.Join(t.TempDir(), LogFile)
	os.WriteFile(path, []byte(trlLog+"\nDISTILL_DONE {\"train_loss\": 1.4, \"eval_loss\": 1.3}\ndistill: trainer exited with status 0\n"), 0o644)
	l, err := ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Done || l.Metrics["train_loss"] != 1.4 || l.Metrics["eval_loss"] != 1.3 || l.Step != 6 {
		t.Errorf("got %+v, want done with the final metrics", l.Progress)
	}
}

func TestReadLogMissingAndTail(t *testing.T) {
	dir := t.TempDir()
	l, err := ReadLog(filepath.Join(dir, LogFile))
	if err != nil || l.Step != 0 || l.Tail != nil {
		t.Errorf("missing log: %+v, %v; want an empty log", l, err)
	}
	var b strings.Builder
	for i := range 100 {
		b.WriteString("line " + string(rune('A'+i%26)) + "\n")
	}
	os.WriteFile(filepath.Join(dir, LogFile), []byte(b.String()+"Traceback (most recent call last):\nValueError: bad"), 0o644)
	l, err = ReadLog(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tail) != TailLines || l.Tail[TailLines-1] != "ValueError: bad" {
		t.Errorf("tail %q: want the last %d lines", l.Tail, TailLines)
	}
	msg := l.Explain("trainer exited with status 1")
	if !strings.HasPrefix(msg, "trainer exited with status 1; the log ends:\n") || !strings.HasSuffix(msg, "Traceback (most recent call last):\nValueError: bad") ||
		strings.Count(msg, "\n") != 10 {
		t.Errorf("explanation %q", msg)
	}
	if got := (Log{}).Explain("killed"); got != "killed" {
		t.Errorf("explanation of an empty log %q", got)
	}
	// The script's own failure is the explanation, not the lines around
	// it (nor its earlier informational lines).
	scripted := Log{Tail: []string{"train_sft: training in bf16 on the CPU", "train_sft: error: missing Python packages: torch", "distill: trainer exited with status 1"}}
	if got, want := scripted.Explain("the trainer exited with status 1"), "the trainer exited with status 1: missing Python packages: torch"; got != want {
		t.Errorf("explanation %q, want %q", got, want)
	}
}
