//! A sentence encoder: tokenizer -> transformer -> pooling -> optional dense heads ->
//! optional L2 normalisation, stored in the Hugging Face / sentence-transformers folder
//! layout (config.json, model.safetensors, tokenizer.json, sentence_bert_config.json,
//! modules.json, 1_Pooling/, 2_Dense/, Normalize) so Python sentence-transformers and
//! text-embeddings-inference load what lase writes and lase loads what they publish.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tch::{Device, Tensor, nn};

use super::bert::BertModel;
use super::config::EncoderConfig;
use super::dense::{Dense, DenseConfig};
use super::linear::LinearKernel;
use super::pooling::{PoolingConfig, pool};
use super::st_folder::{
    DENSE_TYPE, FolderModules, ModulesWriter, NORMALIZE_TYPE, POOLING_TYPE, TokenizerFiles,
    check_weights_size, missing_weights, parse_json, read_json, write_json,
    write_sentence_bert_config,
};
use super::token_layout::UnpadPolicy;
use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;
use crate::io::safetensors::{StorageDtype, assign, read_safetensors, write_safetensors_as};
use crate::tokenizer::{SentenceTokenizer, TokenBatch, TokenIds};

/// Numeric precision of the weights and activations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Precision {
    /// float32: the default, matches PyTorch to cosine >= 0.99999.
    #[default]
    F32,
    /// bfloat16 weights and activations (fast on CPUs with AMX / AVX-512-BF16 and on
    /// GPUs); pooling and normalisation stay float32.
    Bf16,
    /// int8 linear layers (src/model/int8.rs): the transformer layers' weights int8 per
    /// output channel, activations quantised per token, products in int8 (libtorch's
    /// `_int_mm`, oneDNN); embeddings, attention scores, layer norms, pooling and
    /// normalisation stay float32. CPU only, inference only.
    Int8,
}

impl std::str::FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "f32" | "fp32" | "float32" => Ok(Self::F32),
            "bf16" | "bfloat16" => Ok(Self::Bf16),
            "int8" | "i8" => Ok(Self::Int8),
            other => Err(format!("unknown precision {other:?} (f32, bf16, int8)")),
        }
    }
}

/// Everything after the transformer: pooling, dense heads, normalisation.
#[derive(Clone, Debug, PartialEq)]
pub struct HeadSpec {
    pub pooling: PoolingConfig,
    pub dense: Vec<DenseConfig>,
    pub normalize: bool,
}

/// A loaded or freshly initialised sentence encoder.
pub struct SentenceEncoder {
    vs: nn::VarStore,
    config: EncoderConfig,
    transformer: BertModel,
    head: HeadSpec,
    dense: Vec<Dense>,
    tokenizer: SentenceTokenizer,
    tokenizer_json: String,
    side_files: BTreeMap<String, Vec<u8>>,
    do_lower_case: bool,
    precision: Precision,
}

impl std::fmt::Debug for SentenceEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEncoder")
            .field("config", &self.config)
            .field("head", &self.head)
            .field("tokenizer", &self.tokenizer)
            .field("precision", &self.precision)
            .finish()
    }
}

fn dense_var_prefix(i: usize) -> String {
    format!("dense_{i}")
}

/// Whether [`SentenceEncoder::build`] draws the initial weights or leaves zeros that the
/// caller overwrites (every variable: `assign` refuses a file that misses one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InitialWeights {
    Drawn,
    Overwritten,
}

impl SentenceEncoder {
    /// A randomly initialised encoder (BERT initialisation) for training from scratch.
    pub fn new(
        config: EncoderConfig,
        tokenizer_json: String,
        max_seq_length: usize,
        head: HeadSpec,
        device: Device,
    ) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_bytes(tokenizer_json.as_bytes())
            .map_err(|e| LaseError::Tokenizer(format!("invalid tokenizer.json: {e}")))?;
        let tokenizer = SentenceTokenizer::new(inner, max_seq_length, config.pad_token_id, false)?;
        Self::build(
            config,
            tokenizer,
            tokenizer_json,
            BTreeMap::new(),
            false,
            head,
            device,
            InitialWeights::Drawn,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        mut config: EncoderConfig,
        tokenizer: SentenceTokenizer,
        tokenizer_json: String,
        side_files: BTreeMap<String, Vec<u8>>,
        do_lower_case: bool,
        head: HeadSpec,
        device: Device,
        weights: InitialWeights,
    ) -> Result<Self> {
        config.validate()?;
        // HF loaders pick the model class from `architectures`; name one if the config does not.
        let arch = if config.uses_padding_offset_positions() {
            "XLMRobertaModel"
        } else {
            "BertModel"
        };
        config
            .extra
            .entry("architectures")
            .or_insert_with(|| serde_json::json!([arch]));
        if head.pooling.word_embedding_dimension != config.hidden_size {
            return Err(LaseError::Model(format!(
                "pooling word_embedding_dimension {} differs from hidden_size {}",
                head.pooling.word_embedding_dimension, config.hidden_size
            )));
        }
        if head.pooling.modes().is_empty() {
            return Err(LaseError::Model(
                "pooling config enables no pooling mode".into(),
            ));
        }
        if tokenizer.max_length() > config.max_tokens() {
            return Err(LaseError::Model(format!(
                "max_seq_length {} exceeds the {} positions the model has",
                tokenizer.max_length(),
                config.max_tokens()
            )));
        }
        let mut width = head.pooling.output_dim();
        for (i, d) in head.dense.iter().enumerate() {
            if d.in_features != width {
                return Err(LaseError::Model(format!(
                    "dense layer {i} takes {} features but receives {width}",
                    d.in_features
                )));
            }
            width = d.out_features;
        }
        let vs = nn::VarStore::new(device);
        // Weights about to be overwritten are built as zeros: drawing them took about a
        // tenth of a `lase embed` start (docs/benchmarks.md, "Model load without a draw").
        let init_config = match weights {
            InitialWeights::Drawn => config.clone(),
            InitialWeights::Overwritten => EncoderConfig {
                initializer_range: 0.0,
                ..config.clone()
            },
        };
        let transformer = BertModel::new(vs.root(), &init_config);
        let dense = head
            .dense
            .iter()
            .enumerate()
            .map(|(i, d)| {
                Dense::new(
                    vs.root() / dense_var_prefix(i),
                    d.clone(),
                    init_config.initializer_range,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            vs,
            config,
            transformer,
            head,
            dense,
            tokenizer,
            tokenizer_json,
            side_files,
            do_lower_case,
            precision: Precision::F32,
        })
    }

    /// Loads a Hugging Face or sentence-transformers model folder.
    pub fn load(dir: impl AsRef<Path>, device: Device) -> Result<Self> {
        let dir = dir.as_ref();
        if !dir.is_dir() {
            return Err(LaseError::bad_file(dir, "model folder not found"));
        }
        // A folder lase wrote carries SHA-256 checksums: a damaged weight file is refused
        // here, before it loads as a slightly different model.
        if let Some(files) = crate::io::checksums::verify(dir)? {
            tracing::debug!(files, "checksums of {} verified", dir.display());
        }
        let FolderModules {
            transformer_dir,
            pooling,
            dense_dirs,
            normalize,
        } = FolderModules::read(dir)?;
        let config_path = transformer_dir.join("config.json");
        // The family first: another family's config.json misses fields this one needs,
        // and "missing field hidden_size" would not say why.
        let text = crate::io::text::read_text(&config_path)?;
        let raw: serde_json::Value = parse_json(&config_path, &text)?;
        if let Some(model_type) = raw.get("model_type").and_then(serde_json::Value::as_str) {
            super::config::check_model_type(model_type)
                .map_err(|m| LaseError::bad_file(&config_path, m))?;
        }
        let config: EncoderConfig = parse_json(&config_path, &text)?;
        config
            .validate()
            .map_err(|e| LaseError::bad_file(&config_path, e.to_string()))?;
        check_weights_size(&config, &transformer_dir)?;
        let pooling = pooling.unwrap_or_else(|| {
            PoolingConfig::single(config.hidden_size, super::pooling::PoolingMode::Mean)
        });
        let dense_configs = dense_dirs
            .iter()
            .map(|d| read_json::<DenseConfig>(&d.join("config.json")))
            .collect::<Result<Vec<_>>>()?;

        let TokenizerFiles {
            tokenizer,
            tokenizer_json,
            side_files,
            do_lower_case,
        } = TokenizerFiles::read(dir, &transformer_dir, &config)?;
        let head = HeadSpec {
            pooling,
            dense: dense_configs,
            normalize,
        };
        // The folder's files disagree with each other (pooling vs hidden size, no pooling
        // mode, lengths, dense widths): say which folder.
        let mut model = Self::build(
            config,
            tokenizer,
            tokenizer_json,
            side_files,
            do_lower_case,
            head,
            device,
            InitialWeights::Overwritten,
        )
        .map_err(|e| match e {
            LaseError::Model(message) => LaseError::bad_file(dir, message),
            other => other,
        })?;
        model.load_weights(&transformer_dir, &dense_dirs)?;
        Ok(model)
    }

    fn load_weights(&mut self, transformer_dir: &Path, dense_dirs: &[PathBuf]) -> Result<()> {
        let all: Vec<(String, Tensor)> = self.vs.variables().into_iter().collect();
        // `load` has checked that this file exists (check_weights_size).
        let weights_path = transformer_dir.join("model.safetensors");
        let stored = read_safetensors(&weights_path)?;
        // Checkpoints saved from task models prefix the encoder ("bert.", "roberta.", ...).
        let prefix = ["", "bert.", "roberta.", "model.", "encoder."]
            .into_iter()
            .find(|p| stored.contains_key(&format!("{p}embeddings.word_embeddings.weight")))
            .unwrap_or("");
        let transformer_vars: Vec<_> = all
            .iter()
            .filter(|(n, _)| !n.starts_with("dense_"))
            .map(|(n, t)| (n.clone(), t.shallow_clone()))
            .collect();
        let unused = assign(&transformer_vars, &stored, prefix, &weights_path)?;
        let ignorable = |k: &str| {
            k.ends_with("position_ids")
                || k.contains("pooler.")
                || k.starts_with("cls.")
                || k.starts_with("lm_head.")
        };
        let unused: Vec<_> = unused.into_iter().filter(|k| !ignorable(k)).collect();
        if !unused.is_empty() {
            tracing::warn!(
                "{}: {} stored tensors are not used by the model (e.g. {})",
                weights_path.display(),
                unused.len(),
                unused[0]
            );
        }
        for (i, dir) in dense_dirs.iter().enumerate() {
            let path = dir.join("model.safetensors");
            if !path.exists() {
                return Err(missing_weights(&path));
            }
            let stored = read_safetensors(&path)?;
            let var_prefix = format!("{}.", dense_var_prefix(i));
            let vars: Vec<_> = all
                .iter()
                .filter_map(|(n, t)| {
                    n.strip_prefix(&var_prefix)
                        .map(|s| (s.to_owned(), t.shallow_clone()))
                })
                .collect();
            assign(&vars, &stored, "", &path)?;
        }
        Ok(())
    }

    /// A copy of this encoder with one more dense layer, `weight` [k, dim] and `bias` [k]
    /// (identity activation), after the existing head and before normalisation: the
    /// output becomes k-dimensional.
    pub fn with_linear_projection(&self, weight: &Tensor, bias: &Tensor) -> Result<Self> {
        let size = weight.size();
        if size.len() != 2 || size[1] as usize != self.dim() || bias.size() != [size[0]] {
            return Err(LaseError::InvalidArgument(format!(
                "projection of shape {size:?} (bias {:?}) does not fit a {}-d encoder",
                bias.size(),
                self.dim()
            )));
        }
        let mut head = self.head.clone();
        head.dense.push(DenseConfig {
            in_features: size[1] as usize,
            out_features: size[0] as usize,
            bias: true,
            activation_function: super::dense::IDENTITY.into(),
        });
        let index = head.dense.len() - 1;
        let out = Self::build(
            self.config.clone(),
            self.tokenizer.clone(),
            self.tokenizer_json.clone(),
            self.side_files.clone(),
            self.do_lower_case,
            head,
            self.device(),
            InitialWeights::Overwritten,
        )?;
        let mut targets = out.vs.variables();
        tch::no_grad(|| {
            for (name, value) in self.vs.variables() {
                if let Some(t) = targets.get_mut(&name) {
                    t.copy_(&value);
                }
            }
            let prefix = dense_var_prefix(index);
            for (suffix, value) in [("linear.weight", weight), ("linear.bias", bias)] {
                let name = format!("{prefix}.{suffix}");
                let t = targets
                    .get_mut(&name)
                    .expect("the new dense layer's parameters");
                t.copy_(&value.to_device(t.device()).to_kind(t.kind()));
            }
        });
        Ok(out)
    }

    /// Writes the model in the sentence-transformers layout, each file atomically.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<()> {
        self.save_as(dir, StorageDtype::F32)
    }

    /// As [`save`](Self::save), with the weights stored as `dtype` (f16 halves the size).
    /// The folder is written beside `dir` and swapped in whole: a failed or killed save
    /// leaves the folder that was there before (`io::atomic::write_dir_atomic`).
    pub fn save_as(&self, dir: impl AsRef<Path>, dtype: StorageDtype) -> Result<()> {
        crate::io::atomic::write_dir_atomic(dir.as_ref(), |tmp| self.write_folder(tmp, dtype))
    }

    fn write_folder(&self, dir: &Path, dtype: StorageDtype) -> Result<()> {
        write_json(&dir.join("config.json"), &self.config)?;
        let vars = self.vs.variables();
        let mut transformer: Vec<(String, Tensor)> = vars
            .iter()
            .filter(|(n, _)| !n.starts_with("dense_"))
            .map(|(n, t)| (n.clone(), t.shallow_clone()))
            .collect();
        transformer.sort_by(|a, b| a.0.cmp(&b.0));
        write_safetensors_as(&dir.join("model.safetensors"), &transformer, dtype)?;
        write_atomic(dir.join("tokenizer.json"), self.tokenizer_json.as_bytes())?;
        for (name, bytes) in &self.side_files {
            write_atomic(dir.join(name), bytes)?;
        }
        if !self.side_files.contains_key("tokenizer_config.json") {
            write_json(
                &dir.join("tokenizer_config.json"),
                &self.tokenizer.hf_tokenizer_config(),
            )?;
        }
        write_sentence_bert_config(dir, self.tokenizer.max_length(), self.do_lower_case)?;
        let mut modules = ModulesWriter::new(dir);
        let pooling_dir = modules.add(POOLING_TYPE, "Pooling")?;
        write_json(&pooling_dir.join("config.json"), &self.head.pooling)?;
        for (i, dense) in self.dense.iter().enumerate() {
            let dense_dir = modules.add(DENSE_TYPE, "Dense")?;
            write_json(&dense_dir.join("config.json"), &dense.config)?;
            let prefix = format!("{}.", dense_var_prefix(i));
            let mut tensors: Vec<(String, Tensor)> = vars
                .iter()
                .filter_map(|(n, t)| {
                    n.strip_prefix(&prefix)
                        .map(|s| (s.to_owned(), t.shallow_clone()))
                })
                .collect();
            tensors.sort_by(|a, b| a.0.cmp(&b.0));
            write_safetensors_as(&dense_dir.join("model.safetensors"), &tensors, dtype)?;
        }
        if self.head.normalize {
            modules.add(NORMALIZE_TYPE, "Normalize")?;
        }
        modules.finish()?;
        crate::io::checksums::write(dir)?;
        Ok(())
    }

    pub fn config(&self) -> &EncoderConfig {
        &self.config
    }

    pub fn head(&self) -> &HeadSpec {
        &self.head
    }

    /// The tokenizer.json text the model was built with.
    pub fn tokenizer_json(&self) -> &str {
        &self.tokenizer_json
    }

    pub fn tokenizer(&self) -> &SentenceTokenizer {
        &self.tokenizer
    }

    pub fn transformer(&self) -> &BertModel {
        &self.transformer
    }

    pub fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }

    pub fn var_store_mut(&mut self) -> &mut nn::VarStore {
        &mut self.vs
    }

    pub fn device(&self) -> Device {
        self.vs.device()
    }

    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Width of the sentence vectors.
    pub fn dim(&self) -> usize {
        self.head
            .dense
            .last()
            .map(|d| d.out_features)
            .unwrap_or_else(|| self.head.pooling.output_dim())
    }

    pub fn normalizes(&self) -> bool {
        self.head.normalize
    }

    pub fn set_normalize(&mut self, normalize: bool) {
        self.head.normalize = normalize;
    }

    pub fn set_max_seq_length(&mut self, max_length: usize) -> Result<()> {
        // At least one token of text past the special tokens.
        let least = self.tokenizer.special_tokens_per_sentence() + 1;
        if max_length < least || max_length > self.config.max_tokens() {
            return Err(LaseError::InvalidArgument(format!(
                "max length {max_length} must be between {least} and {} (the tokenizer adds {} special tokens to each sentence)",
                self.config.max_tokens(),
                least - 1
            )));
        }
        self.tokenizer.set_max_length(max_length)
    }

    /// Converts the weights for inference in `precision` (int8: packs the transformer
    /// layers' linear weights, on the CPU only; bf16 on the CPU: packs them once for
    /// oneDNN's bfloat16 kernels, unless `LASE_BF16_KERNEL=plain`, which benchmarks use
    /// to compare).
    pub fn set_precision(&mut self, precision: Precision) -> Result<()> {
        if precision == Precision::Int8 && self.device() != Device::Cpu {
            return Err(LaseError::InvalidArgument(format!(
                "int8 runs on the CPU only (the model is on {:?}): use f32 or bf16 there",
                self.device()
            )));
        }
        match precision {
            Precision::F32 | Precision::Int8 => self.vs.float(),
            Precision::Bf16 => self.vs.bfloat16(),
        }
        let kernel = match precision {
            Precision::F32 => LinearKernel::Plain,
            Precision::Int8 => LinearKernel::Int8,
            Precision::Bf16 if self.device() == Device::Cpu && bf16_packing_wanted() => {
                LinearKernel::PackedBf16
            }
            Precision::Bf16 => LinearKernel::Plain,
        };
        if let Err(e) = self.transformer.set_kernel(kernel) {
            // No layer keeps a copy made before the failure: the parameters, already
            // converted, run with the plain products.
            self.transformer.set_kernel(LinearKernel::Plain)?;
            if kernel != LinearKernel::PackedBf16 {
                self.precision = match precision {
                    Precision::Int8 => Precision::F32,
                    other => other,
                };
                return Err(e);
            }
            // A CPU without oneDNN's bfloat16 kernels: libtorch's plain products still
            // compute bfloat16 there, slowly (auto never picks bf16 on such a CPU).
            tracing::warn!("bf16 products run unpacked: {e}");
        }
        self.precision = precision;
        Ok(())
    }

    /// When inference passes run the transformer's layers on the real tokens only
    /// (`crate::model::token_layout`; default: `LASE_UNPAD`, else auto).
    pub fn set_unpad(&mut self, policy: UnpadPolicy) {
        self.transformer.set_unpad(policy);
    }

    /// The kernel running the transformer's linear products for inference (packed
    /// bfloat16 after `set_precision(Bf16)` on a CPU that has oneDNN's kernels).
    pub fn linear_kernel(&self) -> LinearKernel {
        self.transformer.kernel()
    }

    /// Runs the transformer's linear products with `kernel`, for comparisons: packed
    /// bfloat16 needs bfloat16 parameters on the CPU (`set_precision(Bf16)`), int8 float
    /// ones. An error leaves the plain products in place.
    pub fn set_linear_kernel(&mut self, kernel: LinearKernel) -> Result<()> {
        self.transformer.set_kernel(kernel).or_else(|e| {
            self.transformer.set_kernel(LinearKernel::Plain)?;
            Err(e)
        })
    }

    /// Mixed precision for training, as torch.autocast does it: with [`Precision::Bf16`]
    /// the transformer's matrix products run in bfloat16 while the weights (so the
    /// optimizer updates float32 parameters), residual sums, layer norms, pooling and the
    /// loss stay float32. [`Precision::F32`] turns it off. Unlike [`Self::set_precision`]
    /// nothing is converted (saving writes the float32 weights), and any inference copy of
    /// the weights (int8, packed bfloat16) is dropped.
    /// Int8 has no gradients, so it is refused here.
    pub fn set_mixed_precision(&mut self, precision: Precision) -> Result<()> {
        if precision == Precision::Int8 {
            return Err(LaseError::InvalidArgument(
                "int8 is an inference precision: train in f32 or bf16".into(),
            ));
        }
        // Training uses the parameters themselves, never an inference copy of them.
        self.transformer.set_kernel(LinearKernel::Plain)?;
        self.transformer.set_autocast(match precision {
            Precision::F32 => None,
            Precision::Bf16 => Some(tch::Kind::BFloat16),
            Precision::Int8 => {
                return Err(LaseError::InvalidArgument(
                    "int8 is an inference precision: train in f32 or bf16".into(),
                ));
            }
        });
        Ok(())
    }

    /// The kind of the transformer's matrix products under mixed precision (None: off).
    pub fn mixed_precision(&self) -> Precision {
        match self.transformer.autocast() {
            Some(_) => Precision::Bf16,
            None => Precision::F32,
        }
    }

    /// Tokenizes sentences with the model's settings.
    pub fn tokenize<S: AsRef<str>>(&self, sentences: &[S]) -> Result<Vec<TokenIds>> {
        self.tokenizer.encode(sentences)
    }

    /// Pads tokenized sentences into a batch on the model's device.
    pub fn batch(&self, items: &[&TokenIds]) -> TokenBatch {
        TokenBatch::from_ids(items, self.tokenizer.pad_id(), self.device())
    }

    /// Sentence vectors [B, dim] (float32) for a batch; differentiable when `train`
    /// or when gradients are enabled.
    pub fn forward_t(&self, batch: &TokenBatch, train: bool) -> Tensor {
        let tokens = self.transformer.forward_t(
            &batch.input_ids,
            &batch.token_type_ids,
            &batch.attention_mask,
            train,
        );
        self.head_forward(&tokens, &batch.attention_mask)
    }

    /// Pooling, dense heads and normalisation on token states [B, S, H].
    pub fn head_forward(&self, tokens: &Tensor, attention_mask: &Tensor) -> Tensor {
        let mut x = pool(&self.head.pooling, tokens, attention_mask);
        let out_kind = x.kind();
        for dense in &self.dense {
            x = dense.forward(&x.to_kind(tokens.kind())).to_kind(out_kind);
        }
        if self.head.normalize {
            l2_normalize(&x)
        } else {
            x
        }
    }
}

/// x / max(‖x‖₂, 1e-12) row-wise, as torch.nn.functional.normalize.
pub fn l2_normalize(x: &Tensor) -> Tensor {
    let norm = x
        .norm_scalaropt_dim(2, [-1].as_slice(), true)
        .clamp_min(1e-12);
    x / norm
}

/// Whether bf16 inference on the CPU packs its linear weights (the default) or runs
/// libtorch's plain products (`LASE_BF16_KERNEL=plain`, for comparisons).
fn bf16_packing_wanted() -> bool {
    std::env::var("LASE_BF16_KERNEL").map_or(true, |v| v != "plain")
}
