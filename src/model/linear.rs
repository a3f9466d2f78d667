//! A transformer's linear layer, `x W^T + b`: the float parameters (trained and saved)
//! and, while the encoder runs in int8, their packed int8 copy (src/model/int8.rs).

use tch::{Kind, Tensor, nn, nn::Module};

use super::int8::Int8Linear;
use crate::error::Result;

#[derive(Debug)]
pub struct Linear {
    float: nn::Linear,
    int8: Option<Int8Linear>,
}

impl Linear {
    pub fn new(float: nn::Linear) -> Self {
        Self { float, int8: None }
    }

    /// `x W^T + b`: with int8 packed, libtorch's dynamic int8 kernel; otherwise in
    /// `autocast`'s kind when set (mixed precision as torch.autocast does it: the float32
    /// weights are cast for the product, so gradients still reach float32 parameters),
    /// or in the weights' own kind.
    pub fn forward(&self, x: &Tensor, autocast: Option<Kind>) -> Tensor {
        if let Some(int8) = &self.int8 {
            return int8.forward(x);
        }
        match autocast {
            None => self.float.forward(x),
            Some(kind) => x.to_kind(kind).linear(
                &self.float.ws.to_kind(kind),
                self.float.bs.as_ref().map(|b| b.to_kind(kind)).as_ref(),
            ),
        }
    }

    /// Packs the current float weights for int8 products (`true`), or drops the packed
    /// copy so products use the float weights again (`false`).
    pub fn set_int8(&mut self, on: bool) -> Result<()> {
        self.int8 = if on {
            let _guard = tch::no_grad_guard();
            Some(Int8Linear::pack(&self.float.ws, self.float.bs.as_ref())?)
        } else {
            None
        };
        Ok(())
    }

    pub fn is_int8(&self) -> bool {
        self.int8.is_some()
    }
}
