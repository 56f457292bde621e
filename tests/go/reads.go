// How Reasonix reads a ledger line: Go's encoding/json into a record of the allow-listed fields,
// typed as in Reasonix's own record (`compaction` a pointer to a struct). The quote's fields are
// kept raw: the contract takes a quote of the wrong type as `bad_cost` (§8). tests/go_reads.rs feeds it lines (hex, one a line) and compares.
package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

type record struct {
	TS               time.Time       `json:"ts"`
	Model            string          `json:"model,omitempty"`
	Source           string          `json:"source,omitempty"`
	Prompt           int64           `json:"prompt,omitempty"`
	Completion       int64           `json:"completion,omitempty"`
	Reasoning        int64           `json:"reasoning,omitempty"`
	CacheHit         int64           `json:"cache_hit,omitempty"`
	CacheMiss        int64           `json:"cache_miss,omitempty"`
	Total            int64           `json:"total,omitempty"`
	Requests         int64           `json:"requests,omitempty"`
	Turn             bool            `json:"turn,omitempty"`
	CostAmount       json.RawMessage `json:"cost_amount,omitempty"`
	CostCurrency     json.RawMessage `json:"cost_currency,omitempty"`
	CostComplete     json.RawMessage `json:"cost_complete,omitempty"`
	BillingMode      json.RawMessage `json:"billing_mode,omitempty"`
	IncompleteReason json.RawMessage `json:"incomplete_reason,omitempty"`
	Compaction       *compaction     `json:"compaction,omitempty"`
}

// Its fields are diagnostics the exporter never reads: any object is one.
type compaction struct{}

type verdict struct {
	Error      bool    `json:"error"`
	Counts     []int64 `json:"counts"`
	Turn       bool    `json:"turn"`
	Compaction bool    `json:"compaction"`
	Model      string  `json:"model"`
	Source     string  `json:"source"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for in.Scan() {
		line, err := hex.DecodeString(in.Text())
		if err != nil {
			panic(err)
		}
		// Reasonix cuts the white space around a line (strings.TrimSpace) before it decodes it.
		line = bytes.TrimSpace(line)
		var r record
		v := verdict{}
		if err := json.Unmarshal(line, &r); err != nil {
			v.Error = true
		} else {
			v.Counts = []int64{r.Prompt, r.Completion, r.Reasoning, r.CacheHit, r.CacheMiss, r.Total, r.Requests}
			v.Turn = r.Turn
			v.Compaction = r.Compaction != nil
			v.Model, v.Source = r.Model, r.Source
		}
		b, _ := json.Marshal(v)
		fmt.Fprintln(out, string(b))
	}
}
