// Package cluster describes a sharded run for the engines that research
// groups and companies already run many machines with: a Kubernetes Indexed
// Job (built from the Kubernetes API's own Go types) and a Slurm job array.
// Each task runs `tlab run SCENARIO --shard auto/N`, which takes its shard
// from the engine's index variable; `tlab merge` joins the shards after.
package cluster

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Spec is a sharded run of one scenario.
type Spec struct {
	// Scenario is a preset name or a scenario file's path inside the
	// image (or on the cluster's shared file system).
	Scenario string
	// Name names the job and the results directory (DNS-1123: lower-case
	// letters, digits and -).
	Name string
	// Shards is N, the number of tasks.
	Shards int
	// Parallelism bounds the tasks running at once (0: all of them).
	Parallelism int
	// Retries is how many times a failed task is run again; each retry
	// resumes its shard's run directory.
	Retries int
	// CPUs are the whole CPUs each task gets (the emulator polls one);
	// Memory its memory ("4Gi").
	CPUs   int
	Memory string
	// Image is the container image with tlab (Kubernetes).
	Image string
	// Claim is the PersistentVolumeClaim the results go to, mounted at
	// ResultsDir (Kubernetes).
	Claim string
	// ResultsDir is where the shards' directories go: RESULTS/NAME/shard-I.
	ResultsDir string
	// Sets are --set overrides passed to every task.
	Sets []string
	// AllowCommands passes --allow-commands to every task: the scenario
	// names commands (stacks:), and a retried task resumes its shard,
	// which always asks.
	AllowCommands bool
	// Round, when set, makes the job one round of an exploration (tlab
	// explore --slurm/--k8s): each task runs `tlab explore --round ROUND
	// --shard auto/N`, its share of the cells the round's directory lists,
	// into ROUND/shard-I; Scenario, ResultsDir and Sets are not used.
	Round string
	// Program is the command a task runs (default: tlab, found on the
	// node's PATH); its first word is the executable.
	Program []string
}

// Defaults of a Spec.
const (
	DefaultCPUs       = 2
	DefaultMemory     = "4Gi"
	DefaultRetries    = 2
	DefaultClaim      = "tlab-results"
	DefaultResultsDir = "/results"
)

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// NameFor turns a scenario's name into a job name: lower case, runs of
// other characters as one -, at most 63 characters.
func NameFor(scenario string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(scenario) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	n := strings.TrimRight(b.String(), "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	if n == "" {
		n = "tlab"
	}
	return n
}

// WithDefaults fills what the spec leaves empty.
func (s Spec) WithDefaults() Spec {
	if s.CPUs == 0 {
		s.CPUs = DefaultCPUs
	}
	if s.Memory == "" {
		s.Memory = DefaultMemory
	}
	if s.Claim == "" {
		s.Claim = DefaultClaim
	}
	if s.ResultsDir == "" {
		s.ResultsDir = DefaultResultsDir
	}
	if s.Parallelism == 0 {
		s.Parallelism = s.Shards
	}
	return s
}

// Validate reports the first impossible field.
func (s Spec) Validate() error {
	switch {
	case s.Scenario == "" && s.Round == "":
		return errors.New("no scenario")
	case !dns1123.MatchString(s.Name):
		return fmt.Errorf("name %q: want lower-case letters, digits and -, at most 63, starting and ending with a letter or digit", s.Name)
	case s.Shards < 1 || s.Shards > 100000:
		return fmt.Errorf("shards %d: want 1 to 100000", s.Shards)
	case s.Parallelism < 0 || s.Parallelism > s.Shards:
		return fmt.Errorf("parallelism %d: want 1 to the %d shards", s.Parallelism, s.Shards)
	case s.Retries < 0:
		return errors.New("retries must not be negative")
	case s.CPUs < 1:
		return errors.New("a task needs at least one whole CPU")
	}
	if _, err := resource.ParseQuantity(s.Memory); err != nil {
		return fmt.Errorf("memory %q: %w", s.Memory, err)
	}
	return nil
}

// args are a task's tlab arguments; index is how the engine names the
// task's index in them.
func (s Spec) args(index string) []string {
	if s.Round != "" {
		a := []string{"explore", "--round", s.Round, "--shard", "auto/" + strconv.Itoa(s.Shards)}
		if s.AllowCommands {
			a = append(a, "--allow-commands")
		}
		return a
	}
	a := []string{"run", s.Scenario, "--shard", "auto/" + strconv.Itoa(s.Shards),
		"--out", s.ResultsDir + "/" + s.Name + "/shard-" + index, "--resume-existing"}
	if s.AllowCommands {
		a = append(a, "--allow-commands")
	}
	for _, set := range s.Sets {
		a = append(a, "--set", set)
	}
	return a
}

// Job is the Kubernetes Indexed Job of the spec: one pod per shard, the
// pod's JOB_COMPLETION_INDEX picking the shard, privileged (it makes
// network namespaces and writes their sysctls), whole CPUs with requests
// equal to limits (guaranteed QoS, so that no other pod's burst steals
// the emulator's core), at most one task per node (two testbeds on one
// machine disturb each other), per-index retries that resume the shard,
// and the results on a persistent volume.
func Job(s Spec) (*batchv1.Job, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Image == "" {
		return nil, errors.New("no image: give the container image with tlab (see Containerfile)")
	}
	mode := batchv1.IndexedCompletion
	retries := int32(s.Retries)
	shards, parallel := int32(s.Shards), int32(s.Parallelism)
	privileged := true
	res := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(s.CPUs), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse(s.Memory),
	}
	labels := map[string]string{"app.kubernetes.io/name": "tlab", "app.kubernetes.io/instance": s.Name}
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode:       &mode,
			Completions:          &shards,
			Parallelism:          &parallel,
			BackoffLimitPerIndex: &retries,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
							LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
							TopologyKey:   "kubernetes.io/hostname",
						}},
					}},
					Containers: []corev1.Container{{
						Name:    "tlab",
						Image:   s.Image,
						Command: s.program(),
						// Kubernetes expands $(JOB_COMPLETION_INDEX) in
						// arguments; tlab reads it for --shard auto/N.
						Args:            s.args("$(JOB_COMPLETION_INDEX)"),
						SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
						Resources:       corev1.ResourceRequirements{Requests: res, Limits: res},
						VolumeMounts:    []corev1.VolumeMount{{Name: "results", MountPath: s.ResultsDir}},
					}},
					Volumes: []corev1.Volume{{
						Name:         "results",
						VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.Claim}},
					}},
				},
			},
		},
	}
	return job, nil
}

// JobYAML is Job serialised as YAML (through its JSON tags, as kubectl
// writes it).
func JobYAML(s Spec) ([]byte, error) {
	job, err := Job(s)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(job)
}

// Slurm is the spec as an sbatch script: a job array of N tasks, each on a
// node of its own with whole CPUs, running its shard as root (tlab makes
// network namespaces), retried by requeue, into a directory on the shared
// file system.
func Slurm(s Spec) (string, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return "", err
	}
	var b strings.Builder
	if s.Round != "" {
		fmt.Fprintf(&b, "#!/bin/bash\n# written by tlab explore --slurm: %d shards of the round in %s\n", s.Shards, s.Round)
	} else {
		fmt.Fprintf(&b, "#!/bin/bash\n# written by tlab k8s --slurm: %d shards of %s\n", s.Shards, s.Scenario)
	}
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n#SBATCH --array=1-%d%%%d\n", s.Name, s.Shards, s.Parallelism)
	fmt.Fprintf(&b, "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=%d\n#SBATCH --mem=%s\n", s.CPUs, slurmMemory(s.Memory))
	b.WriteString("#SBATCH --exclusive\n#SBATCH --requeue\n")
	if s.Round != "" {
		fmt.Fprintf(&b, "#SBATCH --output=%s/slurm-%%A_%%a.out\n", s.Round)
	} else {
		fmt.Fprintf(&b, "#SBATCH --output=%s/%s/slurm-%%A_%%a.out\n", s.ResultsDir, s.Name)
	}
	b.WriteString("# One task per node (--exclusive): two testbeds on one machine disturb each other.\n")
	b.WriteString("# tlab needs root (or CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_ADMIN) on the node.\n")
	b.WriteString("set -euo pipefail\n")
	args := s.args("${SLURM_ARRAY_TASK_ID}")
	for i, a := range args {
		if !strings.Contains(a, "${") {
			args[i] = shellQuote(a)
		} else {
			args[i] = `"` + a + `"`
		}
	}
	var program []string
	for _, p := range s.program() {
		program = append(program, shellQuote(p))
	}
	fmt.Fprintf(&b, "exec %s %s\n", strings.Join(program, " "), strings.Join(args, " "))
	if s.Round != "" {
		b.WriteString("# then: the exploration's controller merges the shards' cells and decides the next round\n")
	} else {
		fmt.Fprintf(&b, "# then: tlab merge %s/%s/shard-* --out %s/%s/merged\n", s.ResultsDir, s.Name, s.ResultsDir, s.Name)
	}
	return b.String(), nil
}

// program is the task's command.
func (s Spec) program() []string {
	if len(s.Program) == 0 {
		return []string{"tlab"}
	}
	return s.Program
}

// slurmMemory turns a Kubernetes quantity into sbatch's megabytes.
func slurmMemory(q string) string {
	v := resource.MustParse(q)
	return strconv.FormatInt((v.Value()+(1<<20)-1)>>20, 10) + "M"
}

func shellQuote(s string) string {
	if regexp.MustCompile(`^[A-Za-z0-9_./:=+-]+$`).MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
