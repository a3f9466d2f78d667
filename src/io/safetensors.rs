//! Reading and writing safetensors weights for a set of named variables. Loading checks
//! every variable is present with the right shape (naming the file and the keys that are
//! wrong) and converts f16/bf16/f64 checkpoints; saving writes float32 atomically with
//! the `{"format": "pt"}` metadata that Python loaders require.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors, View};
use tch::{Kind, Tensor};

use crate::error::{LaseError, Result};
use crate::io::atomic::write_atomic;

/// Tensors of a safetensors file, CPU, in their stored dtype.
pub fn read_safetensors(path: &Path) -> Result<BTreeMap<String, Tensor>> {
    let file = std::fs::File::open(path).map_err(|e| LaseError::io(path, e))?;
    // SAFETY: read-only map of a file lase does not modify while reading.
    let mmap = unsafe { Mmap::map(&file) }.map_err(|e| LaseError::io(path, e))?;
    let st = SafeTensors::deserialize(&mmap)
        .map_err(|e| LaseError::bad_file(path, format!("not a safetensors file: {e}")))?;
    let mut out = BTreeMap::new();
    for (name, view) in st.iter() {
        let kind = match view.dtype() {
            Dtype::F32 => Kind::Float,
            Dtype::F16 => Kind::Half,
            Dtype::BF16 => Kind::BFloat16,
            Dtype::F64 => Kind::Double,
            Dtype::I64 => Kind::Int64,
            Dtype::I32 => Kind::Int,
            Dtype::U8 => Kind::Uint8,
            Dtype::BOOL => Kind::Bool,
            other => {
                return Err(LaseError::bad_file(
                    path,
                    format!("tensor {name} has unsupported dtype {other:?}"),
                ));
            }
        };
        let shape: Vec<i64> = view.shape().iter().map(|&d| d as i64).collect();
        let tensor = Tensor::from_data_size(view.data(), &shape, kind);
        // safetensors has no checksum: a damaged weight file most often shows as NaN or
        // infinity somewhere, which would otherwise surface as NaN embeddings or losses.
        if tensor.is_floating_point() && tensor.isfinite().all().int64_value(&[]) == 0 {
            return Err(LaseError::bad_file(
                path,
                format!("tensor {name} holds NaN or infinite values (a damaged file?)"),
            ));
        }
        out.insert(name.to_owned(), tensor);
    }
    Ok(out)
}

/// Copies `stored[prefix + name]` into each variable `name`. Every variable must be found
/// with its shape; stored tensors that no variable takes are returned (for a warning).
pub fn assign(
    variables: &[(String, Tensor)],
    stored: &BTreeMap<String, Tensor>,
    prefix: &str,
    path: &Path,
) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    let mut used = std::collections::HashSet::new();
    for (name, var) in variables {
        let key = format!("{prefix}{name}");
        match stored.get(&key) {
            None => missing.push(key),
            Some(t) => {
                if t.size() != var.size() {
                    return Err(LaseError::bad_file(
                        path,
                        format!(
                            "{key} has shape {:?}, the model expects {:?}",
                            t.size(),
                            var.size()
                        ),
                    ));
                }
                tch::no_grad(|| {
                    let mut v = var.shallow_clone();
                    v.copy_(t)
                });
                used.insert(key);
            }
        }
    }
    if !missing.is_empty() {
        let shown: Vec<_> = missing.iter().take(8).cloned().collect();
        return Err(LaseError::bad_file(
            path,
            format!(
                "{} weights the model needs are missing: {}{}",
                missing.len(),
                shown.join(", "),
                if missing.len() > 8 { ", ..." } else { "" }
            ),
        ));
    }
    Ok(stored
        .keys()
        .filter(|k| k.starts_with(prefix) && !used.contains(*k))
        .cloned()
        .collect())
}

/// The dtype weights are stored in on disk (lase computes in float32 either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StorageDtype {
    #[default]
    F32,
    /// IEEE half precision: half the size on disk; loading converts back to float32.
    F16,
}

impl std::str::FromStr for StorageDtype {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "f32" | "fp32" | "float32" => Ok(Self::F32),
            "f16" | "fp16" | "float16" => Ok(Self::F16),
            other => Err(format!("unknown storage dtype {other:?} (f16, f32)")),
        }
    }
}

impl std::fmt::Display for StorageDtype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
        })
    }
}

struct StoredTensor {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl View for &StoredTensor {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.bytes)
    }
    fn data_len(&self) -> usize {
        self.bytes.len()
    }
}

/// Writes named tensors as float32 safetensors, atomically.
pub fn write_safetensors(path: &Path, tensors: &[(String, Tensor)]) -> Result<()> {
    write_safetensors_as(path, tensors, StorageDtype::F32)
}

/// Writes named tensors as safetensors of `dtype`, atomically.
pub fn write_safetensors_as(
    path: &Path,
    tensors: &[(String, Tensor)],
    dtype: StorageDtype,
) -> Result<()> {
    let converted: Vec<(String, StoredTensor)> = tensors
        .iter()
        .map(|(name, t)| {
            let t = t
                .detach()
                .to_device(tch::Device::Cpu)
                .to_kind(Kind::Float)
                .contiguous();
            let numel = t.numel();
            let mut values = vec![0f32; numel];
            t.copy_data(&mut values, numel);
            let (dtype, bytes) = match dtype {
                StorageDtype::F32 => (
                    Dtype::F32,
                    values.iter().flat_map(|v| v.to_le_bytes()).collect(),
                ),
                StorageDtype::F16 => (
                    Dtype::F16,
                    values
                        .iter()
                        .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
                        .collect(),
                ),
            };
            let shape = t.size().iter().map(|&d| d as usize).collect();
            (
                name.clone(),
                StoredTensor {
                    dtype,
                    shape,
                    bytes,
                },
            )
        })
        .collect();
    let metadata = HashMap::from([("format".to_owned(), "pt".to_owned())]);
    let bytes = safetensors::serialize(
        converted.iter().map(|(n, t)| (n.as_str(), t)),
        Some(metadata),
    )
    .map_err(|e| LaseError::bad_file(path, format!("cannot serialise weights: {e}")))?;
    write_atomic(path, &bytes)
}
