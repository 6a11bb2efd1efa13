package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/distill-rag/distill/data"
)

// Spec is a pipeline file. Settings maps are flag names of the stage's
// command to their values, as in a --config file.
type Spec struct {
	// Root is the directory every stage writes under (default
	// runs/NAME, NAME the file's name without its extension).
	Root string `yaml:"root"`
	// All holds settings for every stage whose command takes the flag
	// (global flags like log-level, or base-url, cache, ...); a stage's
	// own section wins over it.
	All Settings `yaml:"all"`
	// Datasets are imported (or generated) and indexed, each into its
	// own directory, by name.
	Datasets map[string]Dataset `yaml:"datasets"`
	// Training names the datasets whose questions are rolled out and
	// labelled; their labels are filtered into one training set.
	Training []string `yaml:"training"`
	// Evaluation names the dataset the benchmark runs on.
	Evaluation string `yaml:"evaluation"`

	Rollout Settings `yaml:"rollout"`
	Label   Settings `yaml:"label"`
	Filter  Settings `yaml:"filter"`
	Train   Settings `yaml:"train"`
	Bench   Settings `yaml:"bench"`
}

// Dataset is one dataset of a pipeline: exactly one of Import (flags of
// distill data import) and Synth (of distill data synth), and how to index
// it. Rollout and Label override the pipeline's sections for this dataset.
type Dataset struct {
	Import  Settings `yaml:"import"`
	Synth   Settings `yaml:"synth"`
	Index   Settings `yaml:"index"`
	Rollout Settings `yaml:"rollout"`
	Label   Settings `yaml:"label"`
}

// Settings are flag values by flag name.
type Settings map[string]any

// Parse reads a pipeline file. Unknown keys are errors, so that a typo
// cannot leave a setting at its default.
func Parse(path string) (Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Spec{}, fmt.Errorf("pipeline: %w", err)
	}
	var s Spec
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return Spec{}, fmt.Errorf("pipeline %s: %s", path, strings.Join(te.Errors, "; "))
		}
		return Spec{}, fmt.Errorf("pipeline %s: %w", path, err)
	}
	if s.Root == "" {
		s.Root = filepath.Join("runs", strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}
	return s, nil
}

// Flags says which flags distill's commands take.
type Flags interface {
	// Has reports whether the command (its path, as ["data", "import"];
	// nil for the global flags) takes the flag called name.
	Has(command []string, name string) bool
	// TakesFile reports whether the flag's value names a file or
	// directory that the command reads.
	TakesFile(command []string, name string) bool
}

// The stage kinds, in the order a pipeline runs them.
const (
	KindImport  = "import"
	KindIndex   = "index"
	KindRollout = "rollout"
	KindLabel   = "label"
	KindFilter  = "filter"
	KindTrain   = "train"
	KindBench   = "bench"
)

// Kinds lists the stage kinds in order.
var Kinds = []string{KindImport, KindIndex, KindRollout, KindLabel, KindFilter, KindTrain, KindBench}

// Stage is one command of a pipeline.
type Stage struct {
	// Name is the kind, and for per-dataset stages ":" and the dataset
	// ("rollout:hotpotqa").
	Name, Kind string
	// Dir is the stage's output directory.
	Dir string
	// Global are the global flags, Command the command's path and Args
	// its flags, outputs and inputs included.
	Global, Command, Args []string
	// Needs names the stages whose outputs it reads; Inputs are the
	// other files and directories it reads, as the file names them.
	Needs, Inputs []string
	// Resume says the command takes --resume to go on after an
	// interruption.
	Resume bool
}

// CommandLine is the stage as it would be typed, without "distill".
func (s Stage) CommandLine() []string {
	return slices.Concat(s.Global, s.Command, s.Args)
}

// owned are the flags the runner sets for each command; the file may not.
var owned = map[string][]string{
	KindImport:  {"out", "overwrite"},
	KindIndex:   {"corpus", "out", "overwrite"},
	KindRollout: {"questions", "index", "out", "resume"},
	KindLabel:   {"in", "out", "resume"},
	KindFilter:  {"in", "out", "overwrite"},
	KindTrain:   {"in", "out", "overwrite"},
	KindBench:   {"questions", "index", "judge-from", "out", "resume"},
}

var datasetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Plan turns a pipeline file into its stages, in the order they run. It
// checks every setting against the flags of its command.
func Plan(s Spec, flags Flags) ([]Stage, error) {
	p := planner{spec: s, flags: flags}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	used := slices.Clone(s.Training)
	if s.Evaluation != "" && !slices.Contains(used, s.Evaluation) {
		used = append(used, s.Evaluation)
	}
	slices.Sort(used)
	var stages []Stage
	add := func(st Stage, err error) error {
		if err != nil {
			return fmt.Errorf("pipeline: %s: %w", st.Name, err)
		}
		stages = append(stages, st)
		return nil
	}
	for _, name := range used {
		if err := add(p.importStage(name)); err != nil {
			return nil, err
		}
	}
	for _, name := range used {
		if err := add(p.indexStage(name)); err != nil {
			return nil, err
		}
	}
	if len(s.Training) > 0 {
		for _, name := range s.Training {
			if err := add(p.rolloutStage(name)); err != nil {
				return nil, err
			}
		}
		for _, name := range s.Training {
			if err := add(p.labelStage(name)); err != nil {
				return nil, err
			}
		}
		if err := add(p.filterStage()); err != nil {
			return nil, err
		}
		if err := add(p.trainStage()); err != nil {
			return nil, err
		}
	}
	if s.Evaluation != "" {
		if err := add(p.benchStage()); err != nil {
			return nil, err
		}
	}
	return stages, nil
}

type planner struct {
	spec  Spec
	flags Flags
}

func (p planner) check() error {
	s := p.spec
	if len(s.Training) == 0 && s.Evaluation == "" {
		return errors.New("nothing to run: name the training datasets (training:) or the evaluation dataset (evaluation:)")
	}
	for name, d := range s.Datasets {
		if !datasetName.MatchString(name) {
			return fmt.Errorf("dataset name %q: use letters, digits, '.', '_' and '-'", name)
		}
		if (d.Import == nil) == (d.Synth == nil) {
			return fmt.Errorf("dataset %s: give exactly one of import: (flags of distill data import) and synth: (of distill data synth)", name)
		}
	}
	for i, name := range s.Training {
		if _, ok := s.Datasets[name]; !ok {
			return fmt.Errorf("training: no dataset %q under datasets:", name)
		}
		if slices.Contains(s.Training[:i], name) {
			return fmt.Errorf("training: %q named twice", name)
		}
	}
	if _, ok := s.Datasets[s.Evaluation]; s.Evaluation != "" && !ok {
		return fmt.Errorf("evaluation: no dataset %q under datasets:", s.Evaluation)
	}
	for k := range s.All {
		if p.flags.Has(nil, k) {
			continue
		}
		if !slices.ContainsFunc(stageCommands, func(cmd []string) bool { return p.flags.Has(cmd, k) }) {
			return fmt.Errorf("all: no command of the pipeline takes --%s", k)
		}
	}
	return nil
}

var stageCommands = [][]string{{"data", "import"}, {"data", "synth"}, {"index"}, {"rollout"}, {"label"}, {"filter"}, {"train"}, {"bench"}}

// stage builds a stage of kind from its settings (later ones win) and the
// flags the runner owns (io: name, value pairs).
func (p planner) stage(kind, name string, command []string, dir string, needs []string, io []string, sections ...Settings) (Stage, error) {
	st := Stage{Name: name, Kind: kind, Dir: filepath.Join(p.spec.Root, dir), Command: command, Needs: needs,
		Resume: slices.Contains(owned[kind], "resume")}
	merged := Settings{}
	global := Settings{}
	for k, v := range p.spec.All {
		switch {
		case p.flags.Has(command, k):
			merged[k] = v
		case p.flags.Has(nil, k):
			global[k] = v
		}
	}
	for _, sec := range sections {
		for k, v := range sec {
			if !p.flags.Has(command, k) {
				return st, fmt.Errorf("distill %s takes no flag --%s (see its --help)", strings.Join(command, " "), k)
			}
			if slices.Contains(owned[kind], k) {
				return st, fmt.Errorf("--%s is set by the pipeline", k)
			}
			merged[k] = v
		}
	}
	for k, v := range merged {
		if s, ok := v.(string); ok && p.flags.TakesFile(command, k) {
			st.Inputs = append(st.Inputs, s)
		}
	}
	slices.Sort(st.Inputs)
	var err error
	if st.Global, err = flagArgs(global); err != nil {
		return st, err
	}
	if st.Args, err = flagArgs(merged); err != nil {
		return st, err
	}
	for i := 0; i+1 < len(io); i += 2 {
		st.Args = append(st.Args, "--"+io[i]+"="+io[i+1])
	}
	return st, nil
}

func (p planner) importStage(name string) (Stage, error) {
	d := p.spec.Datasets[name]
	dir := filepath.Join("data", name)
	out := []string{"out", filepath.Join(p.spec.Root, dir)}
	if d.Synth != nil {
		return p.stage(KindImport, KindImport+":"+name, []string{"data", "synth"}, dir, nil, out, d.Synth)
	}
	return p.stage(KindImport, KindImport+":"+name, []string{"data", "import"}, dir, nil, out, d.Import)
}

func (p planner) indexStage(name string) (Stage, error) {
	dir := filepath.Join("index", name)
	return p.stage(KindIndex, KindIndex+":"+name, []string{"index"}, dir, []string{KindImport + ":" + name},
		[]string{"corpus", p.path("data", name, data.CorpusFile), "out", p.path(dir)}, p.spec.Datasets[name].Index)
}

func (p planner) rolloutStage(name string) (Stage, error) {
	dir := filepath.Join("rollout", name)
	return p.stage(KindRollout, KindRollout+":"+name, []string{"rollout"}, dir,
		[]string{KindImport + ":" + name, KindIndex + ":" + name},
		[]string{"questions", p.path("data", name, data.QuestionsFile), "index", p.path("index", name), "out", p.path(dir)},
		p.spec.Rollout, p.spec.Datasets[name].Rollout)
}

func (p planner) labelStage(name string) (Stage, error) {
	dir := filepath.Join("labels", name)
	return p.stage(KindLabel, KindLabel+":"+name, []string{"label"}, dir, []string{KindRollout + ":" + name},
		[]string{"in", p.path("rollout", name), "out", p.path(dir)},
		p.spec.Label, p.spec.Datasets[name].Label)
}

func (p planner) filterStage() (Stage, error) {
	var needs, io []string
	for _, name := range p.spec.Training {
		needs = append(needs, KindLabel+":"+name)
		io = append(io, "in", p.path("labels", name))
	}
	return p.stage(KindFilter, KindFilter, []string{"filter"}, "sft", needs, append(io, "out", p.path("sft")), p.spec.Filter)
}

func (p planner) trainStage() (Stage, error) {
	return p.stage(KindTrain, KindTrain, []string{"train"}, "judge", []string{KindFilter},
		[]string{"in", p.path("sft"), "out", p.path("judge")}, p.spec.Train)
}

func (p planner) benchStage() (Stage, error) {
	name := p.spec.Evaluation
	needs := []string{KindImport + ":" + name, KindIndex + ":" + name}
	io := []string{"questions", p.path("data", name, data.QuestionsFile), "index", p.path("index", name)}
	if len(p.spec.Training) > 0 {
		needs = append(needs, KindTrain)
		io = append(io, "judge-from", p.path("judge"))
	}
	return p.stage(KindBench, KindBench, []string{"bench"}, "bench", needs, append(io, "out", p.path("bench")), p.spec.Bench)
}

func (p planner) path(elem ...string) string {
	return filepath.Join(append([]string{p.spec.Root}, elem...)...)
}

// flagArgs writes settings as flags, sorted by name: true as --name,
// false as --name=false, a list as its values joined by commas (which
// distill's list flags split).
func flagArgs(s Settings) ([]string, error) {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var args []string
	for _, k := range keys {
		if s[k] == true {
			args = append(args, "--"+k)
			continue
		}
		vals, ok := s[k].([]any)
		if !ok {
			vals = []any{s[k]}
		}
		strs := make([]string, len(vals))
		for i, v := range vals {
			a, err := flagValue(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			strs[i] = a
		}
		args = append(args, "--"+k+"="+strings.Join(strs, ","))
	}
	return args, nil
}

func flagValue(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case nil:
		return "", errors.New("no value")
	default:
		return "", fmt.Errorf("want a string, number, boolean or list of them, not %T", v)
	}
}
