//! A smaller copy of a BERT-family model folder, as the starting point of a thin student
//! (`lase shrink`): a subset of its layers (DistilBERT's initialisation, Sanh et al. 2019:
//! every other layer of the teacher), fewer feed-forward neurons per layer, and a
//! vocabulary pruned to the pieces a corpus uses ([`crate::tokenizer::prune`]).
//!
//! Feed-forward neurons are kept by the magnitude of their path through the block: neuron
//! j of `intermediate.dense` (row j of W1, [ffn, h]) feeds column j of `output.dense`
//! (W2, [h, ffn]), and its score is ‖W1[j,:]‖·‖W2[:,j]‖ (a first-order structured pruning
//! criterion). The student is then distilled (MSE onto its teacher), which is what
//! recovers what the cut took away.
//!
//! Everything else of the folder (pooling, dense heads, normalisation, sentence-transformers
//! files) is copied as it is; the transformer must sit at the folder's root (lase's and
//! sentence-transformers' own layout). The output folder appears whole or not at all.

use std::collections::BTreeMap;
use std::path::Path;

use tch::{Kind, Tensor};

use crate::error::{LaseError, Result};
use crate::io::atomic::{write_atomic, write_dir_atomic};
use crate::io::copy_model_folder;
use crate::io::safetensors::{read_safetensors, write_safetensors};
use crate::tokenizer::extend::{read_json, write_json};
use crate::tokenizer::prune::{PruneReport, prune_wordpiece};

/// What to keep. `None` keeps all of it.
#[derive(Clone, Debug, Default)]
pub struct ShrinkOptions {
    /// Layer indices to keep, increasing (e.g. 0, 2, 4).
    pub layers: Option<Vec<usize>>,
    /// Feed-forward width per kept layer.
    pub intermediate_size: Option<usize>,
    /// Vocabulary size and the sentences that choose its pieces.
    pub vocabulary: Option<(usize, Vec<String>)>,
}

/// What [`shrink_model`] did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ShrinkReport {
    pub layers: Vec<usize>,
    pub intermediate_size: usize,
    pub parameters_before: i64,
    pub parameters_after: i64,
    pub vocabulary: Option<PruneReport>,
}

/// Writes the smaller copy of `model` to `output` (see the module doc).
pub fn shrink_model(model: &Path, options: &ShrinkOptions, output: &Path) -> Result<ShrinkReport> {
    // The input must load as a model (config, weights, tokenizer and head agreeing with
    // each other): the cut below reads sizes from config.json and would otherwise index
    // weights that are not there.
    crate::model::SentenceEncoder::load(model, tch::Device::Cpu)?;
    let config_path = model.join("config.json");
    let mut config = read_json(&config_path)?;
    let field = |name: &str| {
        config[name].as_u64().map(|n| n as usize).ok_or_else(|| {
            LaseError::bad_file(&config_path, format!("{name} is missing or not a number"))
        })
    };
    let (layers_before, ffn_before) = (field("num_hidden_layers")?, field("intermediate_size")?);
    if config
        .get("recurrent_unit_layers")
        .is_some_and(|v| !v.is_null())
    {
        return Err(LaseError::InvalidArgument(format!(
            "{}: shrinking a model with shared (recurrent) layers is not supported",
            config_path.display()
        )));
    }
    let layers = match &options.layers {
        Some(l) => check_layers(l, layers_before)?,
        None => (0..layers_before).collect(),
    };
    let ffn = options.intermediate_size.unwrap_or(ffn_before);
    if ffn == 0 || ffn > ffn_before {
        return Err(LaseError::InvalidArgument(format!(
            "intermediate size {ffn} must be in 1..={ffn_before} (the model's)"
        )));
    }

    let weights_path = model.join("model.safetensors");
    let weights = read_safetensors(&weights_path)?;
    let parameters_before: i64 = weights.values().map(Tensor::numel).map(|n| n as i64).sum();
    let mut weights = keep_layers(weights, &layers);
    if ffn < ffn_before {
        for new in 0..layers.len() {
            prune_feed_forward(&mut weights, new, ffn, &weights_path)?;
        }
    }
    let vocabulary = match &options.vocabulary {
        None => None,
        Some((size, sample)) => {
            let sample: Vec<&str> = sample.iter().map(String::as_str).collect();
            let pruned = prune_wordpiece(&model.join("tokenizer.json"), &sample, *size)?;
            let key = weights
                .keys()
                .find(|k| k.ends_with("word_embeddings.weight"))
                .cloned()
                .ok_or_else(|| LaseError::bad_file(&weights_path, "no word_embeddings.weight"))?;
            let rows = Tensor::from_slice(&pruned.kept_old_ids);
            let table = weights[&key].index_select(0, &rows);
            weights.insert(key, table);
            config["vocab_size"] = pruned.report.new_vocab_size.into();
            Some(pruned)
        }
    };
    config["num_hidden_layers"] = layers.len().into();
    config["intermediate_size"] = ffn.into();
    let parameters_after: i64 = weights.values().map(Tensor::numel).map(|n| n as i64).sum();

    write_dir_atomic(output, |dir| {
        copy_model_folder(model, dir)?;
        let named: Vec<(String, Tensor)> = weights.into_iter().collect();
        write_safetensors(&dir.join("model.safetensors"), &named)?;
        write_json(&dir.join("config.json"), &config)?;
        if let Some(pruned) = &vocabulary {
            write_json(&dir.join("tokenizer.json"), &pruned.tokenizer_json)?;
            if dir.join("vocab.txt").exists() {
                write_atomic(dir.join("vocab.txt"), pruned.vocab_txt.as_bytes())?;
            }
        }
        // The result must load too before it is named `output` (and certified below).
        crate::model::SentenceEncoder::load(dir, tch::Device::Cpu).map_err(|e| {
            LaseError::Model(format!(
                "the cut of {} does not load as a model: {e}",
                model.display()
            ))
        })?;
        // This folder's own checksums (the input's were not copied).
        crate::io::checksums::write(dir)?;
        Ok(())
    })?;
    Ok(ShrinkReport {
        layers,
        intermediate_size: ffn,
        parameters_before,
        parameters_after,
        vocabulary: vocabulary.map(|p| p.report),
    })
}

fn check_layers(layers: &[usize], available: usize) -> Result<Vec<usize>> {
    let increasing = layers.windows(2).all(|w| w[0] < w[1]);
    match layers.last() {
        Some(&last) if increasing && last < available => Ok(layers.to_vec()),
        _ => Err(LaseError::InvalidArgument(format!(
            "layers {layers:?}: need a non-empty increasing list of indices below {available}"
        ))),
    }
}

/// The index `i` of a `...encoder.layer.{i}.` weight name, and where the number sits.
fn layer_index(name: &str) -> Option<(usize, std::ops::Range<usize>)> {
    let marker = "encoder.layer.";
    let at = name.find(marker)? + marker.len();
    let len = name[at..].find('.')?;
    let index = name[at..at + len].parse().ok()?;
    Some((index, at..at + len))
}

/// Drops the layers not in `keep` and renumbers the rest 0, 1, ...
fn keep_layers(weights: BTreeMap<String, Tensor>, keep: &[usize]) -> BTreeMap<String, Tensor> {
    weights
        .into_iter()
        .filter_map(|(name, t)| match layer_index(&name) {
            None => Some((name, t)),
            Some((i, range)) => keep.iter().position(|&k| k == i).map(|new| {
                let mut renamed = name.clone();
                renamed.replace_range(range, &new.to_string());
                (renamed, t)
            }),
        })
        .collect()
}

/// Keeps the `ffn` feed-forward neurons of layer `layer` with the largest ‖W1[j,:]‖·‖W2[:,j]‖.
fn prune_feed_forward(
    weights: &mut BTreeMap<String, Tensor>,
    layer: usize,
    ffn: usize,
    path: &Path,
) -> Result<()> {
    let find = |suffix: &str| {
        let tail = format!("encoder.layer.{layer}.{suffix}");
        weights
            .keys()
            .find(|k| k.ends_with(&tail))
            .cloned()
            .ok_or_else(|| LaseError::bad_file(path, format!("no {tail}")))
    };
    let (w1, b1, w2) = (
        find("intermediate.dense.weight")?,
        find("intermediate.dense.bias")?,
        find("output.dense.weight")?,
    );
    let score = weights[&w1]
        .to_kind(Kind::Float)
        .norm_scalaropt_dim(2, [1], false)
        * weights[&w2]
            .to_kind(Kind::Float)
            .norm_scalaropt_dim(2, [0], false);
    let (_, top) = score.topk(ffn as i64, 0, true, true);
    let (kept, _) = top.sort(0, false);
    let rows = weights[&w1].index_select(0, &kept);
    let bias = weights[&b1].index_select(0, &kept);
    let cols = weights[&w2].index_select(1, &kept);
    weights.insert(w1, rows);
    weights.insert(b1, bias);
    weights.insert(w2, cols);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_names_are_renumbered_and_others_kept() {
        let t = || Tensor::zeros([1], (Kind::Float, tch::Device::Cpu));
        let weights: BTreeMap<String, Tensor> = [
            "embeddings.word_embeddings.weight",
            "encoder.layer.0.output.dense.weight",
            "encoder.layer.1.output.dense.weight",
            "bert.encoder.layer.10.attention.self.query.weight",
            "encoder.layer.2.output.dense.weight",
        ]
        .iter()
        .map(|n| (n.to_string(), t()))
        .collect();
        let kept = keep_layers(weights, &[1, 10]);
        let names: Vec<&str> = kept.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "bert.encoder.layer.1.attention.self.query.weight",
                "embeddings.word_embeddings.weight",
                "encoder.layer.0.output.dense.weight",
            ]
        );
    }

    #[test]
    fn feed_forward_keeps_the_strongest_neurons_in_order() {
        let path = Path::new("model.safetensors");
        // Neuron j has W1 row norm j+1 and W2 column norm 1, except neuron 1 (W2 norm 10).
        let w1 = Tensor::from_slice(&[1f32, 2., 3., 4.]).view([4, 1]);
        let w2 = Tensor::from_slice(&[1f32, 10., 1., 1.]).view([1, 4]);
        let b1 = Tensor::from_slice(&[0f32, 1., 2., 3.]);
        let mut weights: BTreeMap<String, Tensor> = [
            ("encoder.layer.0.intermediate.dense.weight".to_string(), w1),
            ("encoder.layer.0.intermediate.dense.bias".to_string(), b1),
            ("encoder.layer.0.output.dense.weight".to_string(), w2),
        ]
        .into_iter()
        .collect();
        prune_feed_forward(&mut weights, 0, 2, path).unwrap();
        let b: Vec<f32> =
            Vec::try_from(&weights["encoder.layer.0.intermediate.dense.bias"]).unwrap();
        assert_eq!(
            b,
            [1., 3.],
            "neurons 1 (score 20) and 3 (score 4), in their order"
        );
        assert_eq!(
            weights["encoder.layer.0.output.dense.weight"].size(),
            [1, 2]
        );
    }

    #[test]
    fn bad_layer_lists_are_refused() {
        assert!(check_layers(&[], 6).is_err());
        assert!(check_layers(&[2, 1], 6).is_err());
        assert!(check_layers(&[0, 6], 6).is_err());
        assert_eq!(check_layers(&[0, 2, 4], 6).unwrap(), [0, 2, 4]);
    }
}
