//! The OpenTelemetry GenAI conventions' view of the token counters, sent over OTLP beside
//! `reasonix.*` when it is turned on (`--gen-ai-conventions on`, or
//! `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`).
//!
//! It follows the token metrics of [`CONVENTIONS`]: the counters
//! `gen_ai.client.inference.usage.input_tokens`, `.output_tokens`, `.cache_read.input_tokens`
//! and `.reasoning.output_tokens` (names in `catalog.rs`), from the same store and in the same
//! requests as `reasonix.*`: one point per series of ours, under the stream's one start time,
//! held below its mark as ours are, so it is exact and never goes down. What the conventions ask
//! for and the ledger cannot give is in docs/counting-rules.md, "The GenAI conventions' view".

use crate::series::AttrSet;

/// The conventions followed: the `open-telemetry/semantic-conventions-genai` repository at this
/// commit (`model/gen-ai/token-metrics.yaml`; it has no release tags).
pub const CONVENTIONS: &str = "semantic-conventions-genai@066d4a7f356f8600de6f10c42874626ab88692fb";

/// Every provider request Reasonix records is a chat completion.
const OPERATION: &str = "chat";

/// The ledger does not break usage down by modality: the conventions' value for that.
const MODALITY: &str = "unknown";

/// The providers the conventions name (`gen_ai.provider.name`'s well-known values).
const PROVIDERS: [&str; 16] = [
    "anthropic",
    "aws.bedrock",
    "azure.ai.inference",
    "azure.ai.openai",
    "cohere",
    "deepseek",
    "gcp.gemini",
    "gcp.gen_ai",
    "gcp.vertex_ai",
    "groq",
    "ibm.watsonx.ai",
    "mistral_ai",
    "moonshot_ai",
    "openai",
    "perplexity",
    "x_ai",
];

/// Provider labels people give that name one of [`PROVIDERS`] by another spelling.
const ALIASES: [(&str, &str); 7] = [
    ("bedrock", "aws.bedrock"),
    ("gemini", "gcp.gemini"),
    ("vertex", "gcp.vertex_ai"),
    ("watsonx", "ibm.watsonx.ai"),
    ("mistral", "mistral_ai"),
    ("moonshot", "moonshot_ai"),
    ("xai", "x_ai"),
];

/// `gen_ai.provider.name` for a provider label (the user's own name in Reasonix's config): the
/// conventions' value when the label names one of their providers, whatever its case; the label
/// as it is otherwise (the conventions allow a value of one's own).
pub fn provider_name(label: &str) -> &str {
    let lower = label.to_ascii_lowercase();
    let known = PROVIDERS.iter().find(|p| **p == lower);
    let aliased = ALIASES.iter().find(|(alias, _)| *alias == lower).map(|(_, p)| p);
    known.or(aliased).copied().unwrap_or(label)
}

/// `gen_ai.request.model`: the model part of `model_ref` (`deepseek/deepseek-v4-flash` →
/// `deepseek-v4-flash`), a bare name as it is; `None` when the ledger named no model.
pub fn request_model(series: &AttrSet) -> Option<&str> {
    if series.model_ref == "unknown" && series.provider == "unknown" {
        return None;
    }
    let prefix = series.provider.len();
    let model = match series.model_ref.as_bytes().get(prefix) {
        Some(b'/') if series.model_ref.starts_with(&series.provider) => &series.model_ref[prefix + 1..],
        _ => &series.model_ref,
    };
    Some(model)
}

/// A series' attributes in the view: the conventions' four, then `model_ref` and `source` as
/// ours. `model_ref` keeps one point per series of ours, so no two series ever share a point:
/// two provider labels may name one provider, and a bare model name may equal another's model
/// part.
pub fn attributes(series: &AttrSet) -> Vec<(&'static str, &str)> {
    let mut pairs = vec![
        ("gen_ai.operation.name", OPERATION),
        ("gen_ai.provider.name", provider_name(&series.provider)),
    ];
    pairs.extend(request_model(series).map(|model| ("gen_ai.request.model", model)));
    pairs.push(("gen_ai.token.modality", MODALITY));
    pairs.push(("model_ref", &series.model_ref));
    pairs.push(("source", &series.source));
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(model_ref: &str, provider: &str) -> AttrSet {
        AttrSet {
            model_ref: model_ref.into(),
            provider: provider.into(),
            source: "cli".into(),
        }
    }

    #[test]
    fn a_provider_the_conventions_name_is_theirs_and_another_is_kept() {
        assert_eq!(provider_name("deepseek"), "deepseek");
        assert_eq!(provider_name("DeepSeek"), "deepseek");
        assert_eq!(provider_name("moonshot"), "moonshot_ai");
        assert_eq!(provider_name("openrouter"), "openrouter");
        assert_eq!(provider_name("default"), "default");
    }

    #[test]
    fn the_request_model_is_the_model_part_of_model_ref() {
        let s = series("deepseek/deepseek-v4-flash", "deepseek");
        assert_eq!(request_model(&s), Some("deepseek-v4-flash"));
        let s = series("openrouter/google/gemini-2.5-pro", "openrouter");
        assert_eq!(request_model(&s), Some("google/gemini-2.5-pro"));
        assert_eq!(
            request_model(&series("deepseek-chat", "default")),
            Some("deepseek-chat")
        );
        assert_eq!(request_model(&series("unknown", "unknown")), None);
    }

    #[test]
    fn every_attribute_of_the_conventions_is_there_and_ours_after() {
        let s = series("deepseek/deepseek-v4-pro", "deepseek");
        let keys: Vec<&str> = attributes(&s).iter().map(|(k, _)| *k).collect();
        assert_eq!(
            keys,
            [
                "gen_ai.operation.name",
                "gen_ai.provider.name",
                "gen_ai.request.model",
                "gen_ai.token.modality",
                "model_ref",
                "source"
            ]
        );
    }
}
