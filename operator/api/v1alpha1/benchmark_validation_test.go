// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// benchCases: Benchmarks the API server must refuse, each with the message users see. A workload, parameter or
// sweep the engine does not have never reaches a Job.
var benchCases = []struct{ name, objName, spec, want string }{
	{"workload the engine lacks", "b", `{targets: [{name: db}], workload: {type: tpcc}}`,
		`supported values: "smallbank", "tatp", "ogp", "ycsb", "tpccLite", "kv"`},
	{"replication workload not yet", "b", `{targets: [{name: db}], workload: {type: replication}}`,
		`Unsupported value: "replication"`},
	{"read replica target not yet", "b", `{targets: [{kind: ReplicaSet, name: ro}], workload: {type: kv}}`,
		`Unsupported value: "ReplicaSet"`},
	{"no target", "b", `{targets: [], workload: {type: kv}}`, "should have at least 1 items"},
	{"duplicate target", "b", `{targets: [{name: db}, {name: db}], workload: {type: kv}}`, "Duplicate value"},
	{"name too long", strings.Repeat("b", 41), `{targets: [{name: db}], workload: {type: kv}}`,
		"a Benchmark name has at most 40 characters"},
	{"params of another workload", "b", `{targets: [{name: db}], workload: {type: tatp, smallbank: {accounts: 10}}}`,
		"workload parameters must match workload.type: with type tatp set only workload.tatp"},
	{"coroutines on kv", "b", `{targets: [{name: db}], workload: {type: kv}, coroutines: 4}`,
		"coroutines are for transactional workloads"},
	{"locality on kv", "b", `{targets: [{name: db}], workload: {type: kv}, locality: {localBackupReads: "off"}}`,
		"locality switches apply to transactional workloads only"},
	{"unknown sweep parameter", "b",
		`{targets: [{name: db}], workload: {type: smallbank}, sweep: {parameter: clients, values: ["1", "2"]}}`,
		`spec.sweep.parameter: Unsupported value: "clients"`},
	{"sweep of another workload's field", "b",
		`{targets: [{name: db}], workload: {type: smallbank}, sweep: {parameter: ogp.gets, values: ["1", "2"]}}`,
		"sweep.parameter ogp.gets is not a parameter of the smallbank workload"},
	{"sweep of coroutines on kv", "b",
		`{targets: [{name: db}], workload: {type: kv}, sweep: {parameter: coroutines, values: ["1", "2"]}}`,
		"the kv workload sweeps kv.* parameters only"},
	{"sweep value out of range", "b",
		`{targets: [{name: db}], workload: {type: ogp}, sweep: {parameter: ogp.gets, values: ["1", "65"]}}`,
		"sweep.values of ogp.gets must be integers in the range of spec.ogp.gets"},
	{"sweep value not a number", "b",
		`{targets: [{name: db}], workload: {type: smallbank}, sweep: {parameter: coroutines, values: ["1", "x"]}}`,
		"sweep.values of coroutines must be integers"},
	{"sweep theta out of range", "b",
		`{targets: [{name: db}], workload: {type: ycsb}, sweep: {parameter: ycsb.theta, values: ["0.5", "0.9999"]}}`,
		"sweep.values of a theta must be decimals between 0.01 and 0.999"},
	{"sweep switch not on/off", "b",
		`{targets: [{name: db}], workload: {type: tatp}, sweep: {parameter: locality.hashtableBatching, values: ["on", "yes"]}}`,
		"sweep.values of a locality switch must be on or off"},
	{"sweep of one value", "b",
		`{targets: [{name: db}], workload: {type: tatp}, sweep: {parameter: coroutines, values: ["1"]}}`,
		"should have at least 2 items"},
	{"sweep with repeated value", "b",
		`{targets: [{name: db}], workload: {type: tatp}, sweep: {parameter: coroutines, values: ["1", "1"]}}`,
		"Duplicate value"},
	{"ycsb write percent of a letter", "b", `{targets: [{name: db}], workload: {type: ycsb, ycsb: {workload: A, writePercent: 20}}}`,
		"ycsb.writePercent is RCC's parameter"},
	{"ycsb write percent out of range", "b", `{targets: [{name: db}], workload: {type: ycsb, ycsb: {workload: RCC, writePercent: 101}}}`,
		"should be less than or equal to 100"},
	{"sweep of write percent of a letter", "b",
		`{targets: [{name: db}], workload: {type: ycsb}, sweep: {parameter: ycsb.writePercent, values: ["5", "20"]}}`,
		"sweeping ycsb.writePercent needs workload.ycsb.workload RCC"},
	{"sweep of letters with a write percent", "b",
		`{targets: [{name: db}], workload: {type: ycsb, ycsb: {workload: RCC, writePercent: 20}}, sweep: {parameter: ycsb.workload, values: ["A", "RCC"]}}`,
		"leave it out when sweeping ycsb.workload"},
	{"sweep of compute out of range", "b",
		`{targets: [{name: db}], workload: {type: ycsb}, sweep: {parameter: ycsb.computeMicros, values: ["5", "2000000"]}}`,
		"sweep.values of ycsb.computeMicros must be integers in the range"},
	{"tpcc-lite with fewer items than an order's lines", "b", `{targets: [{name: db}], workload: {type: tpccLite, tpccLite: {items: 10}}}`,
		"should be greater than or equal to 15"},
	{"tpcc-lite parameters on ycsb", "b", `{targets: [{name: db}], workload: {type: ycsb, tpccLite: {warehouses: 2}}}`,
		"with type ycsb set only workload.ycsb"},
	{"sweep of tpcc-lite warehouses out of range", "b",
		`{targets: [{name: db}], workload: {type: tpccLite}, sweep: {parameter: tpccLite.warehouses, values: ["0", "4"]}}`,
		"sweep.values of tpccLite.warehouses must be integers in the range"},
	{"ycsb letter without a workload", "b", `{targets: [{name: db}], workload: {type: ycsb, ycsb: {workload: E}}}`,
		`Unsupported value: "E"`},
	{"theta out of range", "b", `{targets: [{name: db}], workload: {type: kv, kv: {theta: "0.0"}}}`,
		"theta must be between 0.01 and 0.999"},
	{"ogp without operations", "b", `{targets: [{name: db}], workload: {type: ogp, ogp: {gets: 0, puts: 0}}}`,
		"ogp.gets and ogp.puts cannot both be 0"},
	{"ogp keys fewer than a transaction needs", "b", `{targets: [{name: db}], workload: {type: ogp, ogp: {keys: 3, gets: 4, puts: 2}}}`,
		"ogp.keys must cover the distinct keys of one transaction"},
	{"linearizability without the load phase", "b",
		`{targets: [{name: db}], workload: {type: kv, kv: {check: linearizability}}, phases: [run]}`,
		"kv.check linearizability needs verify true and the load phase"},
	{"linearizability without verify", "b",
		`{targets: [{name: db}], workload: {type: kv, kv: {check: linearizability}}, verify: false}`,
		"kv.check linearizability needs verify true and the load phase"},
	{"unknown kv write kind", "b", `{targets: [{name: db}], workload: {type: kv, kv: {writeMix: [set, append]}}}`,
		`Unsupported value: "append"`},
	{"repeated kv write kind", "b", `{targets: [{name: db}], workload: {type: kv, kv: {writeMix: [set, set]}}}`,
		"Duplicate value"},
	{"unknown kv check", "b", `{targets: [{name: db}], workload: {type: kv, kv: {check: serializability}}}`,
		`Unsupported value: "serializability"`},
	{"duration too long", "b", `{targets: [{name: db}], workload: {type: kv}, duration: 25h}`,
		"duration must be between 1s and 24h"},
}

func TestBenchmarkRejections(t *testing.T) {
	ns := env.Namespace(t)
	for _, tc := range benchCases {
		t.Run(tc.name, func(t *testing.T) {
			o := object(t, "Benchmark", tc.objName, tc.spec)
			o.SetNamespace(ns)
			expectInvalid(t, env.Client.Create(context.Background(), o), tc.want)
		})
	}
}

// TestBenchmarkAcceptedWithDefaults: valid Benchmarks are created, with the defaults users read back, and the
// spec cannot change afterwards.
func TestBenchmarkAcceptedWithDefaults(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	for name, spec := range map[string]string{
		"smallbank": `{targets: [{name: db}, {name: db2}], workload: {type: smallbank, smallbank: {accounts: 1000}}, sweep: {parameter: coroutines, values: ["1", "4", "16"]}}`,
		"ablation":  `{targets: [{name: db}], workload: {type: tatp}, sweep: {parameter: locality.localBackupReads, values: ["on", "off"]}}`,
		"ogp":       `{targets: [{name: db}], workload: {type: ogp, ogp: {gets: 4, puts: 0}}, sweep: {parameter: ogp.puts, values: ["0", "2"]}}`,
		"kv-theta":  `{targets: [{name: db}], workload: {type: kv, kv: {distribution: zipfian}}, sweep: {parameter: kv.theta, values: ["0.5", "0.99"]}}`,
		"ycsb":      `{targets: [{name: db}], workload: {type: ycsb}, sweep: {parameter: ycsb.workload, values: ["A", "C"]}, phases: [run], verify: false}`,
		"ycsb-rcc":  `{targets: [{name: db}], workload: {type: ycsb, ycsb: {workload: RCC, computeMicros: 0}}, sweep: {parameter: ycsb.writePercent, values: ["0", "10", "50"]}}`,
		"tpcc-lite": `{targets: [{name: db}], workload: {type: tpccLite, tpccLite: {remotePaymentPercent: 0}}, sweep: {parameter: tpccLite.warehouses, values: ["2", "8"]}}`,
		"kv-lin":    `{targets: [{name: db}], workload: {type: kv, kv: {keys: 16, writeMix: [set, incr, cas], check: linearizability}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			o := object(t, "Benchmark", name, spec)
			o.SetNamespace(ns)
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
			if name != "smallbank" {
				return
			}
			for path, want := range map[string]any{"duration": "30s", "verify": true,
				"workload.smallbank.accounts": int64(1000)} {
				got, found, _ := unstructured.NestedFieldNoCopy(o.Object, append([]string{"spec"}, strings.Split(path, ".")...)...)
				if !found || got != want {
					t.Errorf("spec.%s = %v (found %v), want %v", path, got, found, want)
				}
			}
			phases, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "phases")
			if strings.Join(phases, ",") != "load,run" {
				t.Errorf("spec.phases = %v, want [load run]", phases)
			}
			if err := unstructured.SetNestedField(o.Object, "60s", "spec", "duration"); err != nil {
				t.Fatal(err)
			}
			expectInvalid(t, env.Client.Update(ctx, o), "Benchmark spec is immutable")
		})
	}
}
