package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"tlab/internal/cluster"
	"tlab/internal/experiment"
	"tlab/internal/results"
	"tlab/internal/stacks"
	"tlab/internal/units"
)

func runK8s(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("k8s", "k8s FILE|PRESET --shards N --image IMAGE [--slurm] [--out FILE]\n\nWrite a Kubernetes Indexed Job (or, with --slurm, a Slurm job array) that runs the scenario's\nN shards on N machines, one per node, each resuming its shard when retried; then join them\nwith tlab merge. See docs/scale.md.", stderr)
	shards := fs.Int("shards", 0, "number of shards (tasks)")
	image := fs.String("image", "", "Kubernetes: the container image with tlab (build it from the repository's Containerfile)")
	name := fs.String("name", "", "job and results directory name (default: the scenario's name)")
	parallelism := fs.Int("parallelism", 0, "tasks running at once (default: all)")
	retries := fs.Int("retries", cluster.DefaultRetries, "retries per shard (each resumes the shard's run directory)")
	cpus := fs.Int("cpus", cluster.DefaultCPUs, "whole CPUs per task (requests = limits: guaranteed QoS)")
	memory := fs.String("memory", cluster.DefaultMemory, "memory per task")
	claim := fs.String("claim", cluster.DefaultClaim, "Kubernetes: the PersistentVolumeClaim for the results")
	resultsDir := fs.String("results", cluster.DefaultResultsDir, "where the shards' run directories go (NAME/shard-I under it)")
	slurm := fs.Bool("slurm", false, "write a Slurm sbatch script (a job array) instead")
	out := fs.String("out", "", "write to FILE instead of standard output")
	var sets listFlag
	fs.Var(&sets, "set", "override a scenario field in every task (repeatable)")
	allowCommands := fs.Bool("allow-commands", false, "let every task run the commands a scenario file's stacks: name (as tlab run --allow-commands)")
	pos, code, ok := parseArgs(fs, args, 1)
	if !ok {
		return code
	}
	if len(pos) != 1 || *shards < 1 {
		fmt.Fprintln(stderr, "tlab k8s: give a scenario file or preset and --shards N")
		return exitUsage
	}
	if _, isSuite, _ := experiment.ReadSuite(pos[0]); isSuite {
		fmt.Fprintf(stderr, "tlab k8s: %s is a suite; write a job for each of its parts (tlab presets lists them)\n", pos[0])
		return exitUsage
	}
	sc, err := experiment.LoadScenario(pos[0], sets)
	if err != nil {
		fmt.Fprintf(stderr, "tlab k8s: %v\n", err)
		return exitUsage
	}
	cells, err := sc.Cells()
	if err != nil {
		fmt.Fprintf(stderr, "tlab k8s: %v\n", err)
		return exitUsage
	}
	if *shards > len(cells) {
		fmt.Fprintf(stderr, "tlab k8s: %d shards for %d cells would leave shards empty\n", *shards, len(cells))
		return exitUsage
	}
	if *name == "" {
		*name = cluster.NameFor(sc.Name)
	}
	if lines := stacks.Lines(sc); len(lines) > 0 && !*allowCommands && !experiment.IsPreset(pos[0]) {
		fmt.Fprintf(stderr, "tlab k8s: %s names commands that every task would run:\n", pos[0])
		for _, line := range lines {
			fmt.Fprintf(stderr, "  %s\n", line)
		}
		fmt.Fprintln(stderr, "Read them; to run them, give --allow-commands.")
		return exitUsage
	}
	spec := cluster.Spec{Scenario: pos[0], Name: *name, Shards: *shards, Parallelism: *parallelism, Retries: *retries,
		CPUs: *cpus, Memory: *memory, Image: *image, Claim: *claim, ResultsDir: *resultsDir, Sets: sets,
		AllowCommands: stacks.Any(sc)}
	var doc []byte
	if *slurm {
		var s string
		s, err = cluster.Slurm(spec)
		doc = []byte(s)
	} else {
		doc, err = cluster.JobYAML(spec)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tlab k8s: %v\n", err)
		return exitUsage
	}
	if *out == "" {
		_, err = stdout.Write(doc)
		if err != nil {
			return errorExit(stderr, err)
		}
		return exitOK
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return errorExit(stderr, err)
	}
	if err := results.WriteFileAtomic(*out, doc); err != nil {
		return errorExit(stderr, err)
	}
	fmt.Fprintf(stderr, "%s: %s of %s (about %s each)\n", *out, units.Count(*shards, "shard"), units.Count(len(cells), "cell"), units.Count((len(cells)+*shards-1)/(*shards), "cell"))
	return exitOK
}
