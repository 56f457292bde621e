// How Reasonix reads a ledger line: Go's encoding/json into Reasonix's own record
// (internal/stats/record.go), every field typed as there, after strings.TrimSpace. The quote's
// fields are kept raw: the contract takes a quote of the wrong type as `bad_cost` (§8).
// tests/go_reads.rs feeds it lines (hex, one a line) and compares.
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
	TS                 time.Time         `json:"ts"`
	Model              string            `json:"model,omitempty"`
	Source             string            `json:"source,omitempty"`
	Prompt             int64             `json:"prompt,omitempty"`
	Completion         int64             `json:"completion,omitempty"`
	Reasoning          int64             `json:"reasoning,omitempty"`
	CacheHit           int64             `json:"cache_hit,omitempty"`
	CacheMiss          int64             `json:"cache_miss,omitempty"`
	Total              int64             `json:"total,omitempty"`
	Requests           int64             `json:"requests,omitempty"`
	Turn               bool              `json:"turn,omitempty"`
	PrefixHash         string            `json:"prefix_hash,omitempty"`
	PrefixChanged      bool              `json:"prefix_changed,omitempty"`
	PrefixReasons      []string          `json:"prefix_reasons,omitempty"`
	UsageSource        string            `json:"usage_source,omitempty"`
	CostAmount         json.RawMessage   `json:"cost_amount,omitempty"`
	CostCurrency       json.RawMessage   `json:"cost_currency,omitempty"`
	SelectedAmount     string            `json:"selected_amount,omitempty"`
	SelectedCurrency   string            `json:"selected_currency,omitempty"`
	CostComplete       json.RawMessage   `json:"cost_complete,omitempty"`
	DisplayComplete    *bool             `json:"display_complete,omitempty"`
	DisplayStatus      string            `json:"display_status,omitempty"`
	AggregateMode      string            `json:"aggregate_mode,omitempty"`
	OriginalTotals     []string          `json:"original_totals,omitempty"`
	CostEstimated      bool              `json:"cost_estimated,omitempty"`
	LegacyEstimate     bool              `json:"legacy_estimate,omitempty"`
	PricingFingerprint string            `json:"pricing_fingerprint,omitempty"`
	RateDate           string            `json:"rate_date,omitempty"`
	RateBand           string            `json:"rate_band,omitempty"`
	RatedAt            string            `json:"rated_at,omitempty"`
	IncompleteReason   json.RawMessage   `json:"incomplete_reason,omitempty"`
	BillingMode        json.RawMessage   `json:"billing_mode,omitempty"`
	ValuationCNY       string            `json:"valuation_cny,omitempty"`
	ValuationUSD       string            `json:"valuation_usd,omitempty"`
	SelectedCost       float64           `json:"selected_cost,omitempty"`
	Compaction         *compactionRecord `json:"compaction,omitempty"`
}

// Reasonix's CompactionRecord: diagnostics the exporter never keeps, typed as there.
type compactionRecord struct {
	Trigger          string  `json:"trigger,omitempty"`
	Mode             string  `json:"mode,omitempty"`
	Cache            string  `json:"cache,omitempty"`
	SourceTok        int     `json:"src,omitempty"`
	FoldTok          int     `json:"fold,omitempty"`
	Spans            int     `json:"spans,omitempty"`
	ProjTok          int     `json:"proj,omitempty"`
	InputTok         int     `json:"in,omitempty"`
	OutTok           int     `json:"out,omitempty"`
	HitTok           int     `json:"hit,omitempty"`
	MissTok          int     `json:"miss,omitempty"`
	WriteTok         int     `json:"write,omitempty"`
	Reqs             int     `json:"reqs,omitempty"`
	UserTurnsKept    int     `json:"user_kept,omitempty"`
	UserTurnsDropped int     `json:"user_dropped,omitempty"`
	Results          int     `json:"results,omitempty"`
	SavedChars       int     `json:"saved_chars,omitempty"`
	Status           string  `json:"status,omitempty"`
	Reason           string  `json:"reason,omitempty"`
	TokPerChar       float64 `json:"tpc,omitempty"`
	RequestID        string  `json:"provider_request_id,omitempty"`
	Error            string  `json:"err_type,omitempty"`
	SummaryInputMode string  `json:"summary_input,omitempty"`
	ViewFP           string  `json:"view_fp,omitempty"`
	WireFP           string  `json:"wire_fp,omitempty"`
	ToolsCount       int     `json:"tools_count,omitempty"`
	ToolsFP          string  `json:"tools_fp,omitempty"`
	ToolsSource      string  `json:"tools_source,omitempty"`
	PrefixFP         string  `json:"pref_hash,omitempty"`
	PrefLen          int     `json:"pref_len,omitempty"`
	WireLen          int     `json:"wire_len,omitempty"`
	WireDiff         string  `json:"wire_diff,omitempty"`
}

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
