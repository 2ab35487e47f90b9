// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

// Command kubectl-rdx is the kubectl plugin of rdx (`kubectl rdx ...`): it creates and follows Benchmarks, fetches
// their reports and results, and shows a TxCluster's shards and pods. It reads the rdx kinds as unstructured
// objects, so it depends on their field names only, not on the operator's Go types, and keeps working across API
// changes that do not rename the fields it prints.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "0.1.0"

// The rdx kinds the plugin reads and creates.
var (
	benchmarkGVR = schema.GroupVersionResource{Group: "rdx.dev", Version: "v1alpha1", Resource: "benchmarks"}
	txclusterGVR = schema.GroupVersionResource{Group: "rdx.dev", Version: "v1alpha1", Resource: "txclusters"}
)

// app runs commands against one namespace of one cluster.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	dyn            dynamic.Interface
	kube           kubernetes.Interface
	namespace      string
	// explicitNamespace is true when -n was given: a manifest naming another namespace is then an error, as with
	// kubectl create.
	explicitNamespace bool
	// now and pollInterval are replaced by tests.
	now          func() time.Time
	pollInterval time.Duration
}

// options are every flag of every command; run checks that a command is given only its own.
type options struct {
	kubeconfig, context, namespace string
	file, out                      string
	watch, help, version           bool
	timeout                        time.Duration
}

// command is one leaf of the command tree.
type command struct {
	path  string // e.g. "bench watch"
	args  string // positional arguments and flags, for the usage line
	short string
	// nargs is the number of positional arguments after the path.
	nargs int
	// flags are the command's own flags (the global ones are always allowed).
	flags []string
	run   func(ctx context.Context, a *app, o *options, args []string) error
}

var commands = []command{
	{"bench run", "-f FILE [--watch] [--timeout 2h]", "create the Benchmark(s) in FILE (YAML or JSON, - for stdin)",
		0, []string{"filename", "watch", "timeout"},
		func(ctx context.Context, a *app, o *options, _ []string) error {
			return a.benchRun(ctx, o.file, o.watch, o.timeout)
		}},
	{"bench watch", "NAME [--timeout 2h]",
		"print the Benchmark's phase, progress, throughput, p99 and verdict whenever one changes, until it ends",
		1, []string{"timeout"},
		func(ctx context.Context, a *app, o *options, args []string) error {
			return a.benchWatch(ctx, a.namespace, args[0], o.timeout)
		}},
	{"bench report", "NAME [--out DIR]", "write the HTML report to stdout, or report.html and the plots into DIR",
		1, []string{"out"},
		func(ctx context.Context, a *app, o *options, args []string) error {
			return a.benchReport(ctx, args[0], o.out)
		}},
	{"bench results", "NAME", "print every run's results as a table", 1, nil,
		func(ctx context.Context, a *app, _ *options, args []string) error {
			return a.benchResults(ctx, args[0])
		}},
	{"status", "TXCLUSTER", "show a TxCluster's phase, epoch, endpoint, and every shard's pods and primary", 1, nil,
		func(ctx context.Context, a *app, _ *options, args []string) error {
			return a.status(ctx, args[0])
		}},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code: 0 on success, 1 on any error (printed to stderr).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := &options{}
	fs := pflag.NewFlagSet("kubectl-rdx", pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // run prints its own usage and errors
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&o.context, "context", "", "kubeconfig context to use (default: the current context)")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "namespace (default: the context's namespace, else default)")
	fs.StringVarP(&o.file, "filename", "f", "", "bench run: manifest with Benchmark(s); - reads stdin")
	fs.BoolVarP(&o.watch, "watch", "w", false, "bench run: watch the created Benchmark(s) until they end")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Hour, "bench run --watch, bench watch: give up after this long")
	fs.StringVar(&o.out, "out", "", "bench report: write report.html and the plots into this directory")
	fs.BoolVarP(&o.help, "help", "h", false, "show help")
	fs.BoolVar(&o.version, "version", false, "print the plugin's version")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "error: %v\nRun 'kubectl rdx help' for usage.\n", err)
		return 1
	}
	words := fs.Args()
	switch {
	case o.version:
		fmt.Fprintln(stdout, "kubectl-rdx", version)
		return 0
	case len(words) > 0 && words[0] == "help":
		usage(stdout, fs, strings.Join(words[1:], " "))
		return 0
	case len(words) == 0 || o.help:
		usage(stdout, fs, strings.Join(words, " "))
		return 0
	}
	cmd, args := lookup(words)
	if cmd == nil && len(words) == 1 && isGroup(words[0]) {
		usage(stdout, fs, words[0]) // `kubectl rdx bench` lists the bench commands
		return 0
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "error: unknown command %q\n", strings.Join(words, " "))
		usage(stderr, fs, words[0])
		return 1
	}
	if err := checkArgs(fs, cmd, o, args); err != nil {
		fmt.Fprintf(stderr, "error: %v\nUsage: kubectl rdx %s %s\n", err, cmd.path, cmd.args)
		return 1
	}
	a, err := newApp(o, stdin, stdout, stderr)
	if err == nil {
		err = cmd.run(ctx, a, o, args)
	}
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

// lookup finds the command whose path starts words, and returns the remaining words as its arguments.
func lookup(words []string) (*command, []string) {
	for i := range commands {
		path := strings.Fields(commands[i].path)
		if len(words) >= len(path) && strings.Join(words[:len(path)], " ") == commands[i].path {
			return &commands[i], words[len(path):]
		}
	}
	return nil, nil
}

// isGroup says whether word is the first word of a command with more words, such as bench.
func isGroup(word string) bool {
	for _, c := range commands {
		if strings.HasPrefix(c.path, word+" ") {
			return true
		}
	}
	return false
}

func checkArgs(fs *pflag.FlagSet, cmd *command, o *options, args []string) error {
	if len(args) != cmd.nargs {
		return fmt.Errorf("%s takes %d argument(s), got %d: %q", cmd.path, cmd.nargs, len(args), args)
	}
	global := map[string]bool{"kubeconfig": true, "context": true, "namespace": true, "help": true, "version": true}
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err == nil && !global[f.Name] && !contains(cmd.flags, f.Name) {
			err = fmt.Errorf("flag --%s does not apply to %s", f.Name, cmd.path)
		}
	})
	if err != nil {
		return err
	}
	if cmd.path == "bench run" && o.file == "" {
		return errors.New("bench run needs -f FILE")
	}
	if o.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func usage(w io.Writer, fs *pflag.FlagSet, prefix string) {
	fmt.Fprintf(w, "kubectl rdx: run and inspect rdx Benchmarks and TxClusters (kubectl-rdx %s)\n\nCommands:\n", version)
	for _, c := range commands {
		if prefix == "" || strings.HasPrefix(c.path, prefix) {
			fmt.Fprintf(w, "  kubectl rdx %s %s\n      %s\n", c.path, c.args, c.short)
		}
	}
	fmt.Fprintf(w, "  kubectl rdx help [COMMAND]\n  kubectl rdx --version\n\nFlags:\n%s", fs.FlagUsages())
}

// newApp loads the kubeconfig the way kubectl does (--kubeconfig, else $KUBECONFIG, else ~/.kube/config; --context;
// the namespace from -n, else from the context) and builds the clients.
func newApp(o *options, stdin io.Reader, stdout, stderr io.Writer) (*app, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	overrides.Context.Namespace = o.namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-rdx/" + version
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &app{
		stdin: stdin, stdout: stdout, stderr: stderr, dyn: dyn, kube: kube,
		namespace: ns, explicitNamespace: o.namespace != "", now: time.Now, pollInterval: time.Second,
	}, nil
}
