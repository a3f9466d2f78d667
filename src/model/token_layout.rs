//! Unpadded ("packed") token layout for inference: a padded [B, S] batch's real tokens
//! as one [T, H] matrix, so the linear layers, which are most of a forward pass's work,
//! compute only real tokens (text-embeddings-inference and NVIDIA's BERT do the same with
//! variable-length attention kernels). Attention still runs on the padded [B, S] layout:
//! the layer's query, key and value rows are scattered back for it, and its context rows
//! gathered again. Linear layers and layer norms treat every row alone, so a packed
//! pass computes what the padded pass computes on the real tokens (int8 exactly: its
//! products are integer; float to the kernels' blocking), and padded positions come out
//! as zeros, which pooling masks as it masks any padding.
//!
//! When it pays: a server's forward passes hold the few requests that arrived together,
//! so their sentences differ in length more than in `lase embed`'s passes (length-sorted
//! over the whole input). [`TokenLayout::worth_packing`] packs a CPU pass when at least
//! [`MIN_PADDING`] of its positions are padding: packing every pass of `lase embed`'s
//! length-sorted input cost 2.5% (docs/benchmarks.md, "Unpadded forward passes"), so
//! nearly unpadded passes stay padded. On a GPU the rule packs nothing (one copy per
//! sentence is a kernel launch each, and the GPU side is not measured yet).
//! `LASE_UNPAD` = `auto` (default) | `always` | `never` overrides the rule, for
//! comparisons.

use tch::{Device, Kind, Tensor};

/// `auto` packs a CPU pass with at least this share of its [B, S] positions padding: a
/// chosen value, not a measured break-even (docs/benchmarks.md, "Unpadded forward
/// passes", measured it against never and always packing).
pub const MIN_PADDING: f64 = 0.04;

/// Where a padded batch's real tokens sit. Sentence b's tokens are positions
/// 0..lengths[b] of its row (right padding, as lase's batches are); they are rows
/// starts[b]..starts[b] + lengths[b] of the packed [T, H] matrix.
#[derive(Debug)]
pub struct TokenLayout {
    batch: i64,
    seq: i64,
    lengths: Vec<i64>,
    starts: Vec<i64>,
}

/// `LASE_UNPAD`'s settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnpadPolicy {
    /// Pack CPU passes with at least [`MIN_PADDING`] padding.
    Auto,
    /// Pack every inference pass, on any device.
    Always,
    /// Keep every pass padded.
    Never,
}

impl UnpadPolicy {
    /// From `LASE_UNPAD` (unset: auto); an unknown value warns and keeps auto.
    pub fn from_env() -> Self {
        match std::env::var("LASE_UNPAD").as_deref() {
            Err(_) | Ok("") | Ok("auto") => Self::Auto,
            Ok("always") => Self::Always,
            Ok("never") => Self::Never,
            Ok(other) => {
                tracing::warn!("LASE_UNPAD={other:?} is not one of auto, always, never: auto");
                Self::Auto
            }
        }
    }
}

impl TokenLayout {
    /// The layout of `attention_mask` [B, S] (1 = real token), or None when some
    /// sentence's real tokens are not a prefix of its row (left padding).
    pub fn of(attention_mask: &Tensor) -> Option<Self> {
        let (batch, seq) = attention_mask.size2().ok()?;
        let mask = attention_mask.to_device(Device::Cpu).to_kind(Kind::Int64);
        let lengths: Vec<i64> =
            Vec::try_from(mask.sum_dim_intlist([1].as_slice(), false, Kind::Int64)).ok()?;
        let prefix = Tensor::arange(seq, (Kind::Int64, Device::Cpu))
            .unsqueeze(0)
            .lt_tensor(&Tensor::from_slice(&lengths).unsqueeze(1))
            .to_kind(Kind::Int64);
        if !prefix.equal(&mask) {
            return None;
        }
        let starts = lengths
            .iter()
            .scan(0i64, |next, &len| {
                let start = *next;
                *next += len;
                Some(start)
            })
            .collect();
        Some(Self {
            batch,
            seq,
            lengths,
            starts,
        })
    }

    /// The layout when `policy` packs this pass, else None: never while gradients are
    /// recorded (`hidden` requires grad) or during training (dropout), nor for a mask
    /// that is not right padding.
    pub fn worth_packing(
        attention_mask: &Tensor,
        hidden: &Tensor,
        train: bool,
        policy: UnpadPolicy,
    ) -> Option<Self> {
        if train || hidden.requires_grad() || policy == UnpadPolicy::Never {
            return None;
        }
        let (batch, seq) = attention_mask.size2().ok()?;
        let positions = batch * seq;
        if positions == 0 {
            return None;
        }
        let layout = Self::of(attention_mask)?;
        let padding = 1.0 - layout.tokens() as f64 / positions as f64;
        let wanted = match policy {
            UnpadPolicy::Always => true,
            UnpadPolicy::Auto => padding >= MIN_PADDING && hidden.device() == Device::Cpu,
            UnpadPolicy::Never => false,
        };
        wanted.then_some(layout)
    }

    /// B and S of the padded layout.
    pub fn padded_shape(&self) -> (i64, i64) {
        (self.batch, self.seq)
    }

    /// Real tokens, T.
    pub fn tokens(&self) -> i64 {
        self.lengths.iter().sum()
    }

    /// [B, S, W] (or [B * S, W]) -> the real tokens' rows [T, W].
    pub fn pack(&self, padded: &Tensor) -> Tensor {
        let width = last_dim(padded);
        let padded = padded.reshape([self.batch * self.seq, width]).contiguous();
        let packed = Tensor::empty([self.tokens(), width], (padded.kind(), padded.device()));
        self.move_rows(&padded, &packed, Direction::Pack);
        packed
    }

    /// [T, W] -> [B, S, W], zeros at padded positions.
    pub fn unpack(&self, packed: &Tensor) -> Tensor {
        let width = last_dim(packed);
        let packed = packed.contiguous();
        let padded = Tensor::empty(
            [self.batch * self.seq, width],
            (packed.kind(), packed.device()),
        );
        self.move_rows(&padded, &packed, Direction::Unpack);
        padded.view([self.batch, self.seq, width])
    }

    /// Copies each sentence's block of rows between the padded [B * S, W] and packed
    /// [T, W] matrices (both contiguous, same kind and device); unpacking also zeros the
    /// padded rows. On the CPU one memcpy per block; elsewhere one copy_ per block.
    fn move_rows(&self, padded: &Tensor, packed: &Tensor, direction: Direction) {
        // The copies are outside autograd: never on tensors that record gradients.
        assert!(
            !padded.requires_grad() && !packed.requires_grad(),
            "unpadded passes are for tensors without gradients"
        );
        if padded.device() == Device::Cpu {
            self.move_rows_by_memcpy(padded, packed, direction);
        } else {
            self.move_rows_by_copy(padded, packed, direction);
        }
    }

    fn move_rows_by_memcpy(&self, padded: &Tensor, packed: &Tensor, direction: Direction) {
        assert!(padded.device() == Device::Cpu && packed.device() == Device::Cpu);
        assert!(padded.is_contiguous() && packed.is_contiguous());
        assert_eq!(padded.kind(), packed.kind());
        assert_eq!(packed.dim(), 2);
        assert_eq!(padded.size(), vec![self.batch * self.seq, packed.size()[1]]);
        assert_eq!(packed.size()[0], self.tokens());
        let row_bytes = padded.size()[1] as usize * padded.kind().elt_size_in_bytes();
        let (padded_bytes, packed_bytes) = (
            padded.size()[0] as usize * row_bytes,
            packed.size()[0] as usize * row_bytes,
        );
        if padded_bytes == 0 {
            return;
        }
        let padded_ptr = padded.data_ptr() as *mut u8;
        let packed_ptr = packed.data_ptr() as *mut u8;
        let (padded_at, packed_at) = (padded_ptr as usize, packed_ptr as usize);
        assert!(
            padded_at + padded_bytes <= packed_at || packed_at + packed_bytes <= padded_at,
            "the padded and packed tensors overlap"
        );
        for (b, (&len, &start)) in self.lengths.iter().zip(&self.starts).enumerate() {
            let row = b * self.seq as usize;
            let (len, start) = (len as usize, start as usize);
            // SAFETY: checked above: both tensors are contiguous CPU tensors of one kind
            // and width, with B * S and T = sum(lengths) rows (lengths within 0..=S, as
            // `of` checked the mask against them); row + len <= (b + 1) * S <= B * S and
            // start + len <= T, so every range lies inside its tensor; their byte ranges
            // do not overlap.
            unsafe {
                let padded_rows = padded_ptr.add(row * row_bytes);
                let packed_rows = packed_ptr.add(start * row_bytes);
                match direction {
                    Direction::Pack => {
                        std::ptr::copy_nonoverlapping(padded_rows, packed_rows, len * row_bytes)
                    }
                    Direction::Unpack => {
                        std::ptr::copy_nonoverlapping(packed_rows, padded_rows, len * row_bytes);
                        // All-zero bytes are 0.0 in every float kind.
                        std::ptr::write_bytes(
                            padded_rows.add(len * row_bytes),
                            0,
                            (self.seq as usize - len) * row_bytes,
                        );
                    }
                }
            }
        }
    }

    fn move_rows_by_copy(&self, padded: &Tensor, packed: &Tensor, direction: Direction) {
        for (b, (&len, &start)) in self.lengths.iter().zip(&self.starts).enumerate() {
            let row = b as i64 * self.seq;
            let mut padded_rows = padded.narrow(0, row, len);
            let mut packed_rows = packed.narrow(0, start, len);
            match direction {
                Direction::Pack => packed_rows.copy_(&padded_rows),
                Direction::Unpack => {
                    padded_rows.copy_(&packed_rows);
                    if len < self.seq {
                        let _ = padded.narrow(0, row + len, self.seq - len).zero_();
                    }
                }
            }
        }
    }
}

/// The last dimension's size (the row width).
fn last_dim(t: &Tensor) -> i64 {
    *t.size().last().expect("a tensor with a last dimension")
}

#[derive(Clone, Copy)]
enum Direction {
    Pack,
    Unpack,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind};

    fn mask() -> Tensor {
        Tensor::from_slice(&[1i64, 1, 1, 1, 0, 0, 1, 0, 0]).view([3, 3])
    }

    /// Packing keeps exactly the real tokens' rows in order; unpacking puts them back
    /// and zeros the rest.
    #[test]
    fn pack_and_unpack_move_exactly_the_real_rows() {
        let layout = TokenLayout::of(&mask()).unwrap();
        assert_eq!(layout.tokens(), 5);
        assert_eq!(layout.padded_shape(), (3, 3));
        let x = Tensor::arange(18, (Kind::Float, Device::Cpu)).view([3, 3, 2]);
        let packed = layout.pack(&x);
        let rows: Vec<f32> = Vec::try_from(packed.reshape([-1])).unwrap();
        // Positions 0, 1, 2 (sentence 0), 3 (sentence 1), 6 (sentence 2).
        assert_eq!(rows, vec![0., 1., 2., 3., 4., 5., 6., 7., 12., 13.]);
        let back = layout.unpack(&packed);
        let expected = &x * mask().to_kind(Kind::Float).unsqueeze(-1);
        assert_eq!(back.size(), vec![3, 3, 2]);
        assert!(back.equal(&expected));
    }

    /// The memcpy version (CPU) and the copy_ version (other devices) move the same rows.
    #[test]
    fn both_row_movers_agree() {
        let layout = TokenLayout::of(&mask()).unwrap();
        for kind in [Kind::Float, Kind::BFloat16] {
            let x = Tensor::randn([9, 4], (Kind::Float, Device::Cpu)).to_kind(kind);
            let packed = [0, 1].map(|_| Tensor::full([5, 4], 7.0, (kind, Device::Cpu)));
            layout.move_rows_by_memcpy(&x, &packed[0], Direction::Pack);
            layout.move_rows_by_copy(&x, &packed[1], Direction::Pack);
            assert!(packed[0].equal(&packed[1]));
            assert!(packed[0].equal(&x.index_select(0, &Tensor::from_slice(&[0i64, 1, 2, 3, 6]))));
            let padded = [0, 1].map(|_| Tensor::full([9, 4], 7.0, (kind, Device::Cpu)));
            layout.move_rows_by_memcpy(&padded[0], &packed[0], Direction::Unpack);
            layout.move_rows_by_copy(&padded[1], &packed[0], Direction::Unpack);
            assert!(padded[0].equal(&padded[1]));
            let keep = mask().reshape([9, 1]).to_kind(kind);
            assert!(padded[0].equal(&(&x * keep)));
        }
    }

    /// The rule: never in training, with gradients or under `never`; under auto only
    /// with enough padding; never for left padding.
    #[test]
    fn packs_only_inference_passes_with_enough_padding() {
        let padded = mask(); // 4 of 9 positions are padding
        let full = Tensor::ones([2, 4], (Kind::Int64, Device::Cpu));
        let hidden = Tensor::zeros([3, 3, 2], (Kind::Float, Device::Cpu));
        let tracked = hidden.copy().set_requires_grad(true);
        let pack = |m: &Tensor, h: &Tensor, train, policy| {
            TokenLayout::worth_packing(m, h, train, policy).is_some()
        };
        assert!(pack(&padded, &hidden, false, UnpadPolicy::Auto));
        assert!(!pack(&padded, &hidden, true, UnpadPolicy::Auto));
        assert!(!pack(&padded, &hidden, true, UnpadPolicy::Always));
        assert!(!pack(&padded, &tracked, false, UnpadPolicy::Always));
        assert!(!pack(&padded, &hidden, false, UnpadPolicy::Never));
        assert!(!pack(&full, &hidden, false, UnpadPolicy::Auto));
        assert!(pack(&full, &hidden, false, UnpadPolicy::Always));
        let left = Tensor::from_slice(&[0i64, 1, 1, 1, 1, 1]).view([2, 3]);
        assert!(TokenLayout::of(&left).is_none());
        assert!(!pack(&left, &hidden, false, UnpadPolicy::Always));
    }
}
