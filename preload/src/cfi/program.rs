//! The CFI program of a CIE or FDE run up to one address, keeping only what [`super::Rule`]
//! can say: the CFA's register and offset, and the rules of `rbp`, `rsp` and the return
//! address (any other register is not needed to find the caller's frame).

use super::{Cie, Reader};

pub(super) const RBP: u64 = 6;
pub(super) const RSP: u64 = 7;
pub(super) const RA: u64 = 16;

/// A register's rule while the CFI program runs.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Reg {
    Same,
    Undefined,
    /// Saved at CFA + this.
    At(i64),
    /// Anything else (another register, an expression, a value rule).
    Other,
}

#[derive(Clone, Copy)]
pub(super) struct Row {
    /// 0xff: the CFA is an expression or based on another register.
    pub cfa_reg: u64,
    pub cfa_off: i64,
    pub rbp: Reg,
    pub rsp: Reg,
    pub ra: Reg,
}

impl Row {
    fn set(&mut self, reg: u64, rule: Reg) {
        match reg {
            RBP => self.rbp = rule,
            RSP => self.rsp = rule,
            RA => self.ra = rule,
            _ => {}
        }
    }

    /// The register's rule as the CIE left it.
    fn restore(&mut self, reg: u64, init: &Row) {
        match reg {
            RBP => self.rbp = init.rbp,
            RSP => self.rsp = init.rsp,
            RA => self.ra = init.ra,
            _ => {}
        }
    }
}

/// The state one instruction works on: the row, the CIE's row, remembered rows.
struct Machine<'a> {
    c: &'a Cie,
    init: Row,
    row: Row,
    saved: [Row; 8],
    depth: usize,
}

/// What an instruction did to the location.
enum Loc {
    Same,
    Advance(u64),
    Set(u64),
}

/// Runs CFI instructions from `loc` until the row covering `pc` (`u64::MAX`: all of them).
pub(super) unsafe fn run(
    r: &mut Reader,
    c: &Cie,
    init: Row,
    row: Row,
    mut loc: u64,
    pc: u64,
) -> Option<Row> {
    let mut m = Machine {
        c,
        init,
        row,
        saved: [init; 8],
        depth: 0,
    };
    while r.p < r.end {
        let to = match m.step(r)? {
            Loc::Same => continue,
            Loc::Advance(d) => loc.wrapping_add(d.wrapping_mul(c.code_align)),
            Loc::Set(to) => to,
        };
        if to > pc {
            break;
        }
        loc = to;
    }
    Some(m.row)
}

impl Machine<'_> {
    /// One instruction (DWARF 5, 6.4.2, and the GNU ones GCC writes); `None`: one the rules
    /// cannot follow, or a truncated program.
    unsafe fn step(&mut self, r: &mut Reader) -> Option<Loc> {
        let op = r.u8()?;
        let data_align = self.c.data_align;
        match op >> 6 {
            1 => return Some(Loc::Advance((op & 0x3f) as u64)),
            2 => {
                let off = r.uleb()? as i64 * data_align;
                self.row.set((op & 0x3f) as u64, Reg::At(off));
                return Some(Loc::Same);
            }
            3 => {
                self.row.restore((op & 0x3f) as u64, &self.init);
                return Some(Loc::Same);
            }
            _ => {}
        }
        match op {
            0x00 | 0x2e => {
                if op == 0x2e {
                    r.uleb()?; // GNU_args_size
                }
            }
            0x01 => return Some(Loc::Set(r.ptr(self.c.fde_enc, 0)?)),
            0x02 => return Some(Loc::Advance(r.u8()? as u64)),
            0x03 => return Some(Loc::Advance(u16::from_le_bytes(r.fixed::<2>()?) as u64)),
            0x04 => return Some(Loc::Advance(u32::from_le_bytes(r.fixed::<4>()?) as u64)),
            0x05 => {
                let reg = r.uleb()?;
                let off = r.uleb()? as i64 * data_align;
                self.row.set(reg, Reg::At(off));
            }
            0x06 => self.row.restore(r.uleb()?, &self.init),
            0x07 => self.row.set(r.uleb()?, Reg::Undefined),
            0x08 => self.row.set(r.uleb()?, Reg::Same),
            0x09 => {
                let reg = r.uleb()?;
                r.uleb()?;
                self.row.set(reg, Reg::Other);
            }
            0x0a => {
                *self.saved.get_mut(self.depth)? = self.row;
                self.depth += 1;
            }
            0x0b => {
                self.depth = self.depth.checked_sub(1)?;
                // The whole row, the CFA too (as libunwind and libgcc restore it).
                self.row = self.saved[self.depth];
            }
            0x0c => {
                self.row.cfa_reg = r.uleb()?;
                self.row.cfa_off = r.uleb()? as i64;
            }
            0x0d => self.row.cfa_reg = r.uleb()?,
            0x0e => self.row.cfa_off = r.uleb()? as i64,
            0x0f => {
                let len = r.uleb()? as usize;
                r.p = r.p.add(len);
                self.row.cfa_reg = 0xff;
            }
            0x10 | 0x16 => {
                let reg = r.uleb()?;
                let len = r.uleb()? as usize;
                r.p = r.p.add(len);
                self.row.set(reg, Reg::Other);
            }
            0x11 => {
                let reg = r.uleb()?;
                let off = r.sleb()? * data_align;
                self.row.set(reg, Reg::At(off));
            }
            0x12 => {
                self.row.cfa_reg = r.uleb()?;
                self.row.cfa_off = r.sleb()? * data_align;
            }
            0x13 => self.row.cfa_off = r.sleb()? * data_align,
            0x14 | 0x15 => {
                let reg = r.uleb()?;
                r.uleb()?;
                self.row.set(reg, Reg::Other);
            }
            0x2f => {
                let reg = r.uleb()?;
                let off = -(r.uleb()? as i64) * data_align;
                self.row.set(reg, Reg::At(off));
            }
            _ => return None,
        }
        Some(Loc::Same)
    }
}
