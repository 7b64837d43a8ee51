package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func testSpec() Spec {
	return Spec{Scenario: "study-a-full", Name: "study-a-full", Shards: 12, Retries: 3, Image: "registry.example/tlab:1", Sets: []string{"duration=10m"}}
}

// TestJobIsAnIndexedJobOfWholeCPUs: the job is what docs/scale.md
// promises, read back from its YAML.
func TestJobIsAnIndexedJobOfWholeCPUs(t *testing.T) {
	b, err := JobYAML(testSpec())
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		t.Fatalf("the YAML does not read back: %v\n%s", err, b)
	}
	sp := job.Spec
	if job.Kind != "Job" || job.APIVersion != "batch/v1" || *sp.CompletionMode != batchv1.IndexedCompletion || *sp.Completions != 12 || *sp.Parallelism != 12 || *sp.BackoffLimitPerIndex != 3 {
		t.Errorf("job: %s %s, mode %v, completions %d, parallelism %d, retries per index %d", job.APIVersion, job.Kind, *sp.CompletionMode, *sp.Completions, *sp.Parallelism, *sp.BackoffLimitPerIndex)
	}
	pod := sp.Template.Spec
	c := pod.Containers[0]
	if pod.RestartPolicy != corev1.RestartPolicyNever || c.SecurityContext == nil || !*c.SecurityContext.Privileged {
		t.Errorf("pod: restart %s, security %+v", pod.RestartPolicy, c.SecurityContext)
	}
	// Guaranteed QoS: requests equal limits, whole CPUs.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.Cmp(lim) != 0 || req.IsZero() {
			t.Errorf("%s: request %s, limit %s", r, req.String(), lim.String())
		}
	}
	if cpu := c.Resources.Requests[corev1.ResourceCPU]; cpu.MilliValue()%1000 != 0 {
		t.Errorf("cpu %s is not whole CPUs", cpu.String())
	}
	want := []string{"run", "study-a-full", "--shard", "auto/12", "--out", "/results/study-a-full/shard-$(JOB_COMPLETION_INDEX)", "--resume-existing", "--set", "duration=10m"}
	if !slices.Equal(c.Args, want) || c.Command[0] != "tlab" {
		t.Errorf("command %v %v, want tlab %v", c.Command, c.Args, want)
	}
	aff := pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(aff) != 1 || aff[0].TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("anti-affinity %+v: want one task per node", aff)
	}
	if pod.Volumes[0].PersistentVolumeClaim.ClaimName != DefaultClaim || c.VolumeMounts[0].MountPath != DefaultResultsDir {
		t.Errorf("results volume %+v mounted at %s", pod.Volumes[0], c.VolumeMounts[0].MountPath)
	}
}

// TestJobValidatesAgainstKubernetesSchemas checks the YAML against the
// official JSON schemas bundled with the kubernetes-validate package
// (scripts/setup --tests installs it), strictly; a broken copy must fail, so that
// the check can fail.
func TestJobValidatesAgainstKubernetesSchemas(t *testing.T) {
	validator, err := exec.LookPath("kubernetes-validate")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("kubernetes-validate is missing on CI: scripts/setup --tests installs it from PyPI")
		}
		t.Skip("kubernetes-validate is not installed (scripts/setup --tests installs it from PyPI)")
	}
	// A sharded run's job, and an exploration's round's.
	round := testSpec()
	round.Round, round.Scenario = "/results/my-map/rounds/002", ""
	for _, spec := range []Spec{testSpec(), round} {
		b, err := JobYAML(spec)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		good, bad := filepath.Join(dir, "job.yaml"), filepath.Join(dir, "broken.yaml")
		os.WriteFile(good, b, 0o644)
		os.WriteFile(bad, []byte(strings.Replace(string(b), "completionMode: Indexed", "completionMode: Indexed\n  completionsPerNode: 2", 1)), 0o644)
		for _, version := range []string{"1.33.0", "1.37.0"} {
			if out, err := exec.Command(validator, "--strict", "-k", version, good).CombinedOutput(); err != nil {
				t.Errorf("kubernetes %s refuses the job: %v\n%s\n%s", version, err, out, b)
			}
			if out, err := exec.Command(validator, "--strict", "-k", version, bad).CombinedOutput(); err == nil {
				t.Errorf("kubernetes %s accepts a job with an unknown field:\n%s", version, out)
			}
		}
	}
}

// An exploration's round as an array: each task runs its share of the
// round's cells (tlab explore --round), its output beside them.
func TestARoundIsAJobArray(t *testing.T) {
	s := testSpec()
	s.Round, s.Scenario, s.Program = "/shared/my-map/rounds/003", "", []string{"/opt/tlab/bin/tlab"}
	script, err := Slurm(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --array=1-12%12", "#SBATCH --exclusive", "#SBATCH --output=/shared/my-map/rounds/003/slurm-%A_%a.out",
		"exec /opt/tlab/bin/tlab explore --round /shared/my-map/rounds/003 --shard auto/12\n"} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	if strings.Contains(script, "--set") || strings.Contains(script, "tlab merge") {
		t.Errorf("a round's script carries a run's sets or merge:\n%s", script)
	}
}

// TestSlurmScriptIsAJobArray: one task per node, the array 1-N, whole
// CPUs, the shard from the array index; bash parses it.
func TestSlurmScriptIsAJobArray(t *testing.T) {
	s := testSpec()
	s.Parallelism = 4
	script, err := Slurm(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --array=1-12%4", "#SBATCH --exclusive", "#SBATCH --cpus-per-task=2", "#SBATCH --mem=4096M",
		"exec tlab run study-a-full --shard auto/12 --out \"/results/study-a-full/shard-${SLURM_ARRAY_TASK_ID}\" --resume-existing --set duration=10m"} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
	f := filepath.Join(t.TempDir(), "job.sh")
	os.WriteFile(f, []byte(script), 0o644)
	if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v\n%s", err, out)
	}
}

func TestSpecErrors(t *testing.T) {
	for _, s := range []Spec{
		{Scenario: "x", Name: "Bad_Name", Shards: 2, Image: "i"},
		{Scenario: "x", Name: "ok", Shards: 0, Image: "i"},
		{Scenario: "x", Name: "ok", Shards: 2, Parallelism: 3, Image: "i"},
		{Scenario: "x", Name: "ok", Shards: 2, Memory: "lots", Image: "i"},
		{Scenario: "x", Name: "ok", Shards: 2},
	} {
		if _, err := Job(s); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if n := NameFor("Study_A full!"); n != "study-a-full" {
		t.Errorf("NameFor: %q", n)
	}
}
