//! Input embeddings: token (optionally factorised V x B then B x H), absolute position
//! and token type, summed, then LayerNorm and dropout (BERT, Devlin et al. 2019).
//! Parameter names follow HF checkpoints: `embeddings.word_embeddings.weight`, ...

use tch::{Kind, Tensor, nn};

use super::config::EncoderConfig;
use super::param_init::{embedding, layer_norm, linear_no_bias};

#[derive(Debug)]
pub struct Embeddings {
    word_embeddings: nn::Embedding,
    /// B x H projection after a V x B token table (multistage distillation's
    /// embedding bottleneck); `None` when the table is V x H.
    word_projection: Option<nn::Linear>,
    position_embeddings: nn::Embedding,
    token_type_embeddings: Option<nn::Embedding>,
    layer_norm: nn::LayerNorm,
    dropout: f64,
    position_offset: i64,
    padding_offset_positions: bool,
    pad_token_id: i64,
}

impl Embeddings {
    pub fn new(p: nn::Path, c: &EncoderConfig) -> Self {
        let h = c.hidden_size as i64;
        let width = c.embedding_size.unwrap_or(c.hidden_size) as i64;
        let std = c.initializer_range;
        let word_embeddings = embedding(&p / "word_embeddings", c.vocab_size as i64, width, std);
        let word_projection = c
            .embedding_size
            .map(|_| linear_no_bias(&p / "word_embeddings_projection", width, h, std));
        let position_embeddings = embedding(
            &p / "position_embeddings",
            c.max_position_embeddings as i64,
            h,
            std,
        );
        let token_type_embeddings = (c.type_vocab_size > 0).then(|| {
            embedding(
                &p / "token_type_embeddings",
                c.type_vocab_size as i64,
                h,
                std,
            )
        });
        Self {
            word_embeddings,
            word_projection,
            position_embeddings,
            token_type_embeddings,
            layer_norm: layer_norm(&p / "LayerNorm", h, c.layer_norm_eps),
            dropout: c.hidden_dropout_prob,
            position_offset: c.position_offset(),
            padding_offset_positions: c.uses_padding_offset_positions(),
            pad_token_id: c.pad_token_id,
        }
    }

    /// Token embeddings alone, projected to H (what multistage stage 2 aligns).
    pub fn token_embeddings(&self, input_ids: &Tensor) -> Tensor {
        let e = input_ids.apply(&self.word_embeddings);
        match &self.word_projection {
            Some(proj) => e.apply(proj),
            None => e,
        }
    }

    /// `input_ids`, `token_type_ids`: [B, S] int64. Returns [B, S, H].
    pub fn forward_t(&self, input_ids: &Tensor, token_type_ids: &Tensor, train: bool) -> Tensor {
        let positions = self.position_ids(input_ids);
        let mut x = self.token_embeddings(input_ids) + positions.apply(&self.position_embeddings);
        if let Some(types) = &self.token_type_embeddings {
            x += token_type_ids.apply(types);
        }
        x.apply(&self.layer_norm).dropout(self.dropout, train)
    }

    fn position_ids(&self, input_ids: &Tensor) -> Tensor {
        if self.padding_offset_positions {
            // RoBERTa: positions count non-padding tokens only, starting at pad + 1.
            let not_pad = input_ids.ne(self.pad_token_id).to_kind(Kind::Int64);
            not_pad.cumsum(1, Kind::Int64) * &not_pad + self.pad_token_id
        } else {
            let seq = input_ids.size()[1];
            Tensor::arange_start(
                self.position_offset,
                self.position_offset + seq,
                (Kind::Int64, input_ids.device()),
            )
            .unsqueeze(0)
        }
    }
}
