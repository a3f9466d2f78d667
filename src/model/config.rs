//! The transformer's configuration, mirroring Hugging Face's `config.json` field for
//! field (BERT, RoBERTa and XLM-R families), with HF's defaults. Two lase extensions
//! are written only when used: a factorised embedding bottleneck (`embedding_size`)
//! and parameter recurrence (`recurrent_unit_layers`).

use serde::{Deserialize, Serialize};

use crate::error::{LaseError, Result};

/// Non-linearity of the feed-forward block (HF `hidden_act`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Activation {
    /// Exact GELU, x Φ(x) (HF "gelu").
    #[serde(rename = "gelu")]
    Gelu,
    /// Tanh approximation of GELU (HF "gelu_new", "gelu_pytorch_tanh").
    #[serde(rename = "gelu_new", alias = "gelu_pytorch_tanh", alias = "gelu_fast")]
    GeluTanh,
    #[serde(rename = "relu")]
    Relu,
    /// x σ(x) (HF "silu" / "swish").
    #[serde(rename = "silu", alias = "swish")]
    Silu,
}

impl Activation {
    pub fn apply(self, x: &tch::Tensor) -> tch::Tensor {
        match self {
            Activation::Gelu => x.gelu("none"),
            Activation::GeluTanh => x.gelu("tanh"),
            Activation::Relu => x.relu(),
            Activation::Silu => x.silu(),
        }
    }

    /// The same activation as a post-op fused into a packed bfloat16 product.
    pub fn fused(self) -> crate::model::packed_linear::FusedActivation {
        use crate::model::packed_linear::FusedActivation;
        match self {
            Activation::Gelu => FusedActivation::Gelu,
            Activation::GeluTanh => FusedActivation::GeluTanh,
            Activation::Relu => FusedActivation::Relu,
            Activation::Silu => FusedActivation::Silu,
        }
    }
}

/// Architecture of a BERT-family post-LN encoder, as in HF `config.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EncoderConfig {
    #[serde(default = "defaults::model_type")]
    pub model_type: String,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "defaults::hidden_act")]
    pub hidden_act: Activation,
    #[serde(default = "defaults::dropout")]
    pub hidden_dropout_prob: f64,
    #[serde(default = "defaults::dropout")]
    pub attention_probs_dropout_prob: f64,
    #[serde(default = "defaults::max_position_embeddings")]
    pub max_position_embeddings: usize,
    #[serde(default = "defaults::type_vocab_size")]
    pub type_vocab_size: usize,
    #[serde(default = "defaults::layer_norm_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "defaults::initializer_range")]
    pub initializer_range: f64,
    #[serde(default)]
    pub pad_token_id: i64,
    #[serde(default = "defaults::position_embedding_type")]
    pub position_embedding_type: String,
    /// lase: width B of a factorised token embedding (V x B, then a B x H projection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_size: Option<usize>,
    /// lase: number of distinct layers M in a recurring unit applied
    /// `num_hidden_layers / M` times (parameter sharing across layers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurrent_unit_layers: Option<usize>,
    /// Every other field of config.json, kept so that a save writes it back.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The `model_type`s whose weights and positions this encoder implements.
pub const SUPPORTED_MODEL_TYPES: &[&str] =
    &["bert", "roberta", "xlm-roberta", "xlm_roberta", "camembert"];

/// Refuses a `model_type` of another family (DistilBERT, MPNet, DeBERTa, ...), whose
/// config.json would otherwise fail on a missing field or load without its weights.
pub fn check_model_type(model_type: &str) -> std::result::Result<(), String> {
    if SUPPORTED_MODEL_TYPES.contains(&model_type) {
        return Ok(());
    }
    Err(format!(
        "model_type {model_type:?} is not supported: lase runs BERT-family encoders ({})",
        SUPPORTED_MODEL_TYPES.join(", ")
    ))
}

mod defaults {
    use super::Activation;
    pub fn model_type() -> String {
        "bert".into()
    }
    pub fn hidden_act() -> Activation {
        Activation::Gelu
    }
    pub fn dropout() -> f64 {
        0.1
    }
    pub fn max_position_embeddings() -> usize {
        512
    }
    pub fn type_vocab_size() -> usize {
        2
    }
    pub fn layer_norm_eps() -> f64 {
        1e-12
    }
    pub fn initializer_range() -> f64 {
        0.02
    }
    pub fn position_embedding_type() -> String {
        "absolute".into()
    }
}

impl EncoderConfig {
    /// A BERT config with HF defaults for everything but the shape.
    pub fn bert(
        vocab_size: usize,
        hidden_size: usize,
        num_hidden_layers: usize,
        num_attention_heads: usize,
        intermediate_size: usize,
    ) -> Self {
        Self {
            model_type: defaults::model_type(),
            vocab_size,
            hidden_size,
            num_hidden_layers,
            num_attention_heads,
            intermediate_size,
            hidden_act: defaults::hidden_act(),
            hidden_dropout_prob: defaults::dropout(),
            attention_probs_dropout_prob: defaults::dropout(),
            max_position_embeddings: defaults::max_position_embeddings(),
            type_vocab_size: defaults::type_vocab_size(),
            layer_norm_eps: defaults::layer_norm_eps(),
            initializer_range: defaults::initializer_range(),
            pad_token_id: 0,
            position_embedding_type: defaults::position_embedding_type(),
            embedding_size: None,
            recurrent_unit_layers: None,
            extra: Default::default(),
        }
    }

    /// RoBERTa-style models (RoBERTa, XLM-R, CamemBERT) number positions from
    /// `pad_token_id + 1`, counting only non-padding tokens.
    pub fn uses_padding_offset_positions(&self) -> bool {
        matches!(
            self.model_type.as_str(),
            "roberta" | "xlm-roberta" | "camembert" | "xlm_roberta"
        )
    }

    /// First position id a real token gets.
    pub fn position_offset(&self) -> i64 {
        if self.uses_padding_offset_positions() {
            self.pad_token_id + 1
        } else {
            0
        }
    }

    /// Longest input the position table can hold.
    pub fn max_tokens(&self) -> usize {
        self.max_position_embeddings - self.position_offset() as usize
    }

    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    /// Number of distinct layers stored (M under recurrence, else L).
    pub fn stored_layers(&self) -> usize {
        self.recurrent_unit_layers.unwrap_or(self.num_hidden_layers)
    }

    /// Checks that the shape is buildable; errors say which field is wrong.
    pub fn validate(&self) -> Result<()> {
        let err = |m: String| Err(LaseError::Model(m));
        check_model_type(&self.model_type).map_err(LaseError::Model)?;
        if self.hidden_size == 0 || self.num_attention_heads == 0 || self.num_hidden_layers == 0 {
            return err(
                "hidden_size, num_attention_heads and num_hidden_layers must be > 0".into(),
            );
        }
        if !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if self.position_embedding_type != "absolute" {
            return err(format!(
                "position_embedding_type {:?} is not supported (only \"absolute\")",
                self.position_embedding_type
            ));
        }
        if let Some(m) = self.recurrent_unit_layers
            && (m == 0 || !self.num_hidden_layers.is_multiple_of(m))
        {
            return err(format!(
                "recurrent_unit_layers {m} must divide num_hidden_layers {}",
                self.num_hidden_layers
            ));
        }
        if self.embedding_size == Some(0) {
            return err("embedding_size must be > 0".into());
        }
        // Padding positions look up this row: outside the table, a forward would fail
        // inside libtorch.
        if self.pad_token_id < 0 || self.pad_token_id as u64 >= self.vocab_size as u64 {
            return err(format!(
                "pad_token_id {} is outside the vocabulary (vocab_size {})",
                self.pad_token_id, self.vocab_size
            ));
        }
        if self.max_position_embeddings as i64 <= self.position_offset() {
            return err("max_position_embeddings leaves no room for tokens".into());
        }
        Ok(())
    }

    /// A lower bound on the parameters this config describes (embedding tables and the
    /// layers' weight matrices; biases and norms left out), or None when it overflows.
    /// A loader compares it with the weights file's size before allocating anything, so
    /// a config claiming absurd sizes is refused instead of exhausting memory.
    pub fn minimum_parameters(&self) -> Option<u128> {
        let width = self.embedding_size.unwrap_or(self.hidden_size) as u128;
        let h = self.hidden_size as u128;
        let tables = (self.vocab_size as u128)
            .checked_add(self.max_position_embeddings as u128)?
            .checked_add(self.type_vocab_size as u128)?
            .checked_mul(width)?;
        let per_layer = h.checked_mul(h)?.checked_mul(4)?.checked_add(
            h.checked_mul(self.intermediate_size as u128)?
                .checked_mul(2)?,
        )?;
        let distinct_layers = self.recurrent_unit_layers.unwrap_or(self.num_hidden_layers) as u128;
        tables.checked_add(per_layer.checked_mul(distinct_layers)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hf_bert_config_and_keeps_unknown_fields() {
        let json = r#"{"architectures":["BertModel"],"hidden_act":"gelu","hidden_size":384,
            "intermediate_size":1536,"model_type":"bert","num_attention_heads":12,
            "num_hidden_layers":6,"vocab_size":30522,"layer_norm_eps":1e-12}"#;
        let c: EncoderConfig = serde_json::from_str(json).unwrap();
        assert_eq!(c.head_dim(), 32);
        assert_eq!(c.position_offset(), 0);
        assert_eq!(c.max_tokens(), 512);
        assert!(c.extra.contains_key("architectures"));
        let back = serde_json::to_value(&c).unwrap();
        assert_eq!(back["architectures"][0], "BertModel");
        assert!(back.get("embedding_size").is_none());
    }

    #[test]
    fn xlmr_positions_start_after_padding() {
        let json = r#"{"model_type":"xlm-roberta","hidden_size":8,"intermediate_size":16,
            "num_attention_heads":2,"num_hidden_layers":1,"vocab_size":10,"pad_token_id":1,
            "max_position_embeddings":514,"hidden_act":"gelu"}"#;
        let c: EncoderConfig = serde_json::from_str(json).unwrap();
        assert_eq!(c.position_offset(), 2);
        assert_eq!(c.max_tokens(), 512);
    }

    #[test]
    fn rejects_bad_shapes() {
        let mut c = EncoderConfig::bert(10, 10, 2, 3, 20);
        assert!(c.validate().unwrap_err().to_string().contains("multiple"));
        c.num_attention_heads = 2;
        c.recurrent_unit_layers = Some(3);
        assert!(c.validate().unwrap_err().to_string().contains("divide"));
    }
}
