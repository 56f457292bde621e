//! Every metric the exporter counts, described once: each quantity's names in every output, its
//! unit, its description and where its increments come from in the ledger; its name in the
//! OpenTelemetry GenAI conventions' view, where they have one; the spend's and the unpriced
//! requests' names. The decoder's field list (`ledger/key.rs`), the counters
//! (`series/totals.rs`), `status`, OTLP, `/metrics` and `history` read them from here.

/// The names of one exported metric in every output: a quantity's ([`Quantity::names`]), the
/// spend's ([`COST`]) or the unpriced requests' ([`UNPRICED`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricNames {
    pub otlp_name: &'static str,
    pub prom_name: &'static str,
    pub unit: &'static str,
    pub description: &'static str,
}

/// One of the counted quantities of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Quantity {
    Prompt,
    Completion,
    Reasoning,
    CacheHit,
    CacheMiss,
    Total,
    Requests,
    Turns,
}

/// Where a quantity's increments come from in the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A usage row's count of this name (docs/ledger-format.md), absent as zero.
    Count(&'static str),
    /// One a turn-completed marker (`"turn": true`).
    TurnMarker,
}

/// A quantity, described once.
pub struct Described {
    pub quantity: Quantity,
    /// Its key in `status --json`.
    pub key: &'static str,
    pub source: Source,
    pub names: MetricNames,
    /// Its counter in the OpenTelemetry GenAI token-metrics conventions (`export/gen_ai.rs`),
    /// when they define one.
    pub gen_ai: Option<MetricNames>,
}

/// Every quantity, in the order of every output (and of [`Quantity`]). A stored `Totals`
/// (`series/totals.rs`) is read by position, so a new quantity goes last (docs/design.md,
/// "Where to change what").
pub const QUANTITIES: &[Described] = &[
    tokens(
        Quantity::Prompt,
        "prompt",
        "reasonix.prompt.tokens",
        "reasonix_prompt_tokens_total",
        "Input tokens, cached and uncached together.",
        Some(gen_ai(
            "gen_ai.client.inference.usage.input_tokens",
            "gen_ai_client_inference_usage_input_tokens_total",
            "Input tokens, cached tokens included.",
        )),
    ),
    tokens(
        Quantity::Completion,
        "completion",
        "reasonix.completion.tokens",
        "reasonix_completion_tokens_total",
        "Output tokens, reasoning included.",
        Some(gen_ai(
            "gen_ai.client.inference.usage.output_tokens",
            "gen_ai_client_inference_usage_output_tokens_total",
            "Output tokens, reasoning tokens included.",
        )),
    ),
    tokens(
        Quantity::Reasoning,
        "reasoning",
        "reasonix.reasoning.tokens",
        "reasonix_reasoning_tokens_total",
        "Reasoning tokens, a part of completion tokens.",
        Some(gen_ai(
            "gen_ai.client.inference.usage.reasoning.output_tokens",
            "gen_ai_client_inference_usage_reasoning_output_tokens_total",
            "Output tokens spent on reasoning, a part of the output tokens.",
        )),
    ),
    tokens(
        Quantity::CacheHit,
        "cache_hit",
        "reasonix.cache_hit.tokens",
        "reasonix_cache_hit_tokens_total",
        "Input tokens served from the provider's prefix cache.",
        Some(gen_ai(
            "gen_ai.client.inference.usage.cache_read.input_tokens",
            "gen_ai_client_inference_usage_cache_read_input_tokens_total",
            "Input tokens read from the provider's cache, a part of the input tokens.",
        )),
    ),
    tokens(
        Quantity::CacheMiss,
        "cache_miss",
        "reasonix.cache_miss.tokens",
        "reasonix_cache_miss_tokens_total",
        "Input tokens not served from the provider's prefix cache.",
        None,
    ),
    tokens(
        Quantity::Total,
        "total",
        "reasonix.tokens",
        "reasonix_tokens_total",
        "Total tokens as reported by the provider.",
        None,
    ),
    Described {
        quantity: Quantity::Requests,
        key: "requests",
        // A row older than this field stands for one request (`ledger/decode.rs`).
        source: Source::Count("requests"),
        names: MetricNames {
            otlp_name: "reasonix.requests",
            prom_name: "reasonix_requests_total",
            unit: "{request}",
            description: "Provider requests.",
        },
        gen_ai: None,
    },
    Described {
        quantity: Quantity::Turns,
        key: "turns",
        source: Source::TurnMarker,
        names: MetricNames {
            otlp_name: "reasonix.turns",
            prom_name: "reasonix_turns_total",
            unit: "{turn}",
            description: "Completed agent turns.",
        },
        gen_ai: None,
    },
];

/// A token count, read from the ledger field of its `status` key's name.
const fn tokens(
    quantity: Quantity,
    key: &'static str,
    otlp_name: &'static str,
    prom_name: &'static str,
    description: &'static str,
    gen_ai: Option<MetricNames>,
) -> Described {
    Described {
        quantity,
        key,
        source: Source::Count(key),
        names: MetricNames {
            otlp_name,
            prom_name,
            unit: "{token}",
            description,
        },
        gen_ai,
    }
}

/// A token counter of the GenAI conventions; `prom_name` is how a collector or Prometheus 3
/// names it.
const fn gen_ai(otlp_name: &'static str, prom_name: &'static str, description: &'static str) -> MetricNames {
    MetricNames {
        otlp_name,
        prom_name,
        unit: "{token}",
        description,
    }
}

pub const COST: MetricNames = MetricNames {
    otlp_name: "reasonix.cost",
    prom_name: "reasonix_cost_total",
    unit: "{currency}",
    description: "Reasonix's own price quote: an estimate at list price, not a bill, in the currency of the currency attribute, never converted.",
};

pub const UNPRICED: MetricNames = MetricNames {
    otlp_name: "reasonix.requests.unpriced",
    prom_name: "reasonix_requests_unpriced_total",
    unit: "{request}",
    description: "Provider requests whose usage row carries no usable price quote, by reason.",
};

impl Quantity {
    /// How many there are.
    pub const COUNT: usize = QUANTITIES.len();

    /// Every quantity, in the order of every output.
    pub const ALL: [Quantity; Quantity::COUNT] = {
        let mut all = [Quantity::Prompt; Quantity::COUNT];
        let mut i = 0;
        while i < Quantity::COUNT {
            all[i] = QUANTITIES[i].quantity;
            i += 1;
        }
        all
    };

    /// Its description in [`QUANTITIES`].
    pub const fn described(self) -> &'static Described {
        &QUANTITIES[self as usize]
    }

    /// The key in `status --json`.
    pub fn key(self) -> &'static str {
        self.described().key
    }

    /// The ledger count it is read from, if it is read from one.
    pub const fn ledger_field(self) -> Option<&'static str> {
        match self.described().source {
            Source::Count(field) => Some(field),
            Source::TurnMarker => None,
        }
    }

    /// Its names and unit, as the exporters write them (README, "Metrics").
    pub fn names(self) -> MetricNames {
        self.described().names
    }

    pub fn otlp_name(self) -> &'static str {
        self.names().otlp_name
    }

    pub fn prom_name(self) -> &'static str {
        self.names().prom_name
    }

    pub fn unit(self) -> &'static str {
        self.names().unit
    }

    pub fn description(self) -> &'static str {
        self.names().description
    }

    /// Its counter in the GenAI conventions' view, if they define one.
    pub fn gen_ai(self) -> Option<MetricNames> {
        self.described().gen_ai
    }

    pub const fn index(self) -> usize {
        self as usize
    }
}

// The table is in the enum's order: `Quantity::ALL[i]` is the `i`th variant.
const _: () = {
    let mut i = 0;
    while i < Quantity::COUNT {
        assert!(
            QUANTITIES[i].quantity as usize == i,
            "QUANTITIES is out of Quantity's order"
        );
        i += 1;
    }
};

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_name_and_field_belongs_to_one_quantity() {
        let distinct = |names: Vec<&str>| names.iter().collect::<BTreeSet<_>>().len() == names.len();
        let all = |name: fn(&Described) -> &'static str| QUANTITIES.iter().map(name).collect::<Vec<_>>();
        assert!(distinct(all(|d| d.key)));
        assert!(distinct(all(|d| d.names.otlp_name)));
        assert!(distinct(all(|d| d.names.prom_name)));
        let fields: Vec<&str> = Quantity::ALL.iter().filter_map(|q| q.ledger_field()).collect();
        assert!(distinct(fields));
        for d in QUANTITIES {
            assert!(
                d.names.prom_name.ends_with("_total"),
                "{}: a counter",
                d.names.prom_name
            );
        }
    }
}
