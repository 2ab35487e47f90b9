// Copyright 2026 The rdx authors. Licensed under the Apache License, Version 2.0.

package main

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The sequential-reads model (--reads sequential) is for a protocol whose writes a leader orders (ZAB) and whose
// reads are served from the local copy of the node the client is connected to. Its rule, per key, over the key's
// write order (the register states so far, starting with absent) and a floor per client:
//
//   - A write or read-modify-write (set, getset, setnx, cas, del, incr) is the linearizable step on the latest
//     state (its result is checked the same way); a new register state is appended to the write order. When the
//     call returned, its client's floor becomes the index of the latest state: it has seen at least that much (a
//     setnx or cas that did not swap too). A call without an end (unknown outcome) moves no floor.
//   - A get by client c that returned is legal iff some state at an index >= floor[c] equals what it read; floor[c]
//     becomes the smallest such index (the greedy choice: a lower floor only allows more later).
//
// Porcupine still places every operation at one point within its interval, so a read never returns a value whose
// write had not begun before the read returned, nor one older than its client's own last write or read of the key;
// any older value is allowed otherwise (sequential consistency per key, within real time).
//
// The search's state is not that write order, though. A client's calls that returned come one after another
// (its session), so the model knows each client's gets and writes to come, in order. What the write order since
// c's floor decides is only how many of c's next gets (up to its next write, which moves the floor to the latest
// state anyway) could already return what they returned: the first at the first state >= floor[c] that equals its
// value, the second at the first one from there, and so on. So the state is the latest register and, per client,
// its place in its session and that count; a new state extends the counts, a get uses one up. Two orders of the
// same concurrent writes that leave the same counts are then the same state, as in the linearizable model: with
// the write order itself in the state, a client stalled across thousands of writes (a paused node) kept their
// orders apart, and the search of a history with one stale read grew past minutes.

// sessionOp is an operation of a client's session: a get of known outcome (and what it read) or a write that
// returned. Calls without an end are not in it: they may take effect after the client's later calls.
type sessionOp struct {
	start int64
	get   bool
	value *string // get: what it read (nil: absent)
}

// sessions are the sessions of the clients with a get: their calls one after another (sequentialSessions checks).
type sessions struct {
	index map[int]int // client -> its place in ops and in a state's progress
	ops   [][]sessionOp
}

// progress is a client's place in its session and how many of the gets from there could already return what they
// returned (the greedy places of the rule, each in the write order since the one before).
type progress struct{ next, readable int }

// seqState is a state of the model: immutable (a step returns a new one; progress is copied when it changes).
type seqState struct {
	latest   register
	progress []progress // by sessions.index
}

// sequentialSessions checks that each client's calls that returned do not overlap (a session); the error names the
// client and the two calls.
func sequentialSessions(ops []Op) error {
	ends := map[[2]any][]Op{} // (key, client) -> its ops with an end
	for _, op := range ops {
		if op.End != nil {
			k := [2]any{op.Key, op.Client}
			ends[k] = append(ends[k], op)
		}
	}
	for _, s := range ends {
		sort.Slice(s, func(i, j int) bool { return s[i].Start < s[j].Start })
		for i := 1; i < len(s); i++ {
			if s[i].Start <= *s[i-1].End {
				return fmt.Errorf("client %d's calls on key %q overlap (%s at %d..%d, %s at %d..%d): the sequential-reads "+
					"model needs each client's calls one after another", s[i].Client, s[i].Key, s[i-1].Kind, s[i-1].Start,
					*s[i-1].End, s[i].Kind, s[i].Start, *s[i].End)
			}
		}
	}
	return nil
}

// seqModel is the model for one key's history, whose clients' calls do not overlap (sequentialSessions).
func seqModel(history []porcupine.Operation) porcupine.Model {
	byClient := map[int][]porcupine.Operation{}
	for _, op := range history {
		c, out := op.Input.(call), op.Output.(Output)
		if c.In.Kind == "get" && out.Known || c.In.Kind != "get" && c.Done {
			byClient[c.Client] = append(byClient[c.Client], op)
		}
	}
	ss := &sessions{index: map[int]int{}}
	for client, ops := range byClient {
		if !slices.ContainsFunc(ops, func(op porcupine.Operation) bool { return op.Input.(call).In.Kind == "get" }) {
			continue // no get: its floor is never looked at
		}
		sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
		session := make([]sessionOp, len(ops))
		for i, op := range ops {
			if i > 0 && op.Call <= ops[i-1].Return {
				panic(fmt.Sprintf("sequential reads: client %d's calls overlap (checked before the search)", client))
			}
			c := op.Input.(call)
			session[i] = sessionOp{start: c.Start, get: c.In.Kind == "get", value: op.Output.(Output).Value}
		}
		ss.index[client] = len(ss.ops)
		ss.ops = append(ss.ops, session)
	}
	return porcupine.Model{
		Init: func() any {
			s := seqState{progress: make([]progress, len(ss.ops))}
			for i := range s.progress {
				s.progress[i] = ss.extend(i, progress{}, register{}) // every floor starts at the absent state
			}
			return s
		},
		Step:                      ss.step,
		Equal:                     seqEqual,
		Hash:                      seqHash,
		DescribeOperation:         describeOperation,
		DescribeState:             ss.describe,
		DescribeOperationMetadata: describeMetadata,
	}
}

// extend counts the gets after the readable ones that could return r, the newest state (the greedy place of the
// first is the newest state; the next one's search starts there).
func (ss *sessions) extend(i int, p progress, r register) progress {
	s := ss.ops[i]
	for p.next+p.readable < len(s) && s[p.next+p.readable].get && sameValue(r, s[p.next+p.readable].value) {
		p.readable++
	}
	return p
}

// expect panics unless the call is the client's next one in its session: Porcupine keeps real time, and a
// session's calls do not overlap, so it cannot be otherwise.
func (ss *sessions) expect(i int, p progress, c call) {
	if p.next >= len(ss.ops[i]) || ss.ops[i][p.next].start != c.Start {
		panic(fmt.Sprintf("sequential reads: client %d's call at %d linearized out of its session's order", c.Client, c.Start))
	}
}

func (ss *sessions) step(state, input, output any) (bool, any) {
	s, c, out := state.(seqState), input.(call), output.(Output)
	i, tracked := ss.index[c.Client]
	if c.In.Kind == "get" {
		if !out.Known {
			return true, s
		}
		p := s.progress[i]
		ss.expect(i, p, c)
		if p.readable == 0 {
			return false, s
		}
		s.progress = slices.Clone(s.progress)
		s.progress[i] = progress{p.next + 1, p.readable - 1}
		return true, s
	}
	ok, next := step(s.latest, input, output)
	if !ok {
		return false, s
	}
	r := next.(register)
	changed, moves := r != s.latest, tracked && c.Done
	if !changed && !moves {
		return true, s
	}
	s.latest, s.progress = r, slices.Clone(s.progress)
	if changed {
		for j := range s.progress {
			s.progress[j] = ss.extend(j, s.progress[j], r)
		}
	}
	if moves { // its floor is now the latest state
		ss.expect(i, s.progress[i], c)
		s.progress[i] = ss.extend(i, progress{next: s.progress[i].next + 1}, r)
	}
	return true, s
}

func seqEqual(a, b any) bool {
	x, y := a.(seqState), b.(seqState)
	return x.latest == y.latest && slices.Equal(x.progress, y.progress)
}

func seqHash(state any) uint64 {
	s := state.(seqState)
	h := fnv.New64a()
	h.Write([]byte(s.latest.value))
	sum := h.Sum64()
	if s.latest.present {
		sum = ^sum
	}
	for _, p := range s.progress {
		sum = (sum ^ uint64(p.next)<<32 ^ uint64(p.readable)) * 0x100000001b3
	}
	return sum
}

// describe shows the latest state and, for each client whose next call is a get, whether it could return what it
// returned already ("may read") or only once some later write produces it ("waits for").
func (ss *sessions) describe(state any) string {
	s := state.(seqState)
	clients := make([]int, 0, len(ss.index))
	for c := range ss.index {
		clients = append(clients, c)
	}
	sort.Ints(clients)
	var b strings.Builder
	b.WriteString(s.latest.String())
	shown := 0
	for _, c := range clients {
		i := ss.index[c]
		p := s.progress[i]
		if p.next >= len(ss.ops[i]) || !ss.ops[i][p.next].get {
			continue
		}
		if shown == 8 {
			b.WriteString("; ...")
			break
		}
		shown++
		read := register{ss.ops[i][p.next].value != nil, ""}
		if read.present {
			read.value = *ss.ops[i][p.next].value
		}
		if p.readable > 0 {
			fmt.Fprintf(&b, "; c%d may read %s", c, read)
		} else {
			fmt.Fprintf(&b, "; c%d waits for %s", c, read)
		}
	}
	return b.String()
}
