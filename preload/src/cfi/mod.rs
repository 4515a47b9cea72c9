//! The unwind rule of one code address from the loaded objects' `.eh_frame` (found through
//! `.eh_frame_hdr`'s sorted table), for [`crate::unwind`]. Only the rules libunwind's own fast
//! path handles are given: the caller's frame (CFA) at an offset from `rsp` or `rbp`, the
//! return address just below it, `rbp` unchanged or saved at an offset from it. Anything else
//! (expressions, signal frames, other registers, odd encodings) is `None`: the stack is then
//! taken by libunwind, as before. Allocation-free: it runs inside malloc.

mod program;

use libc::{c_int, c_void};
use program::{run, Reg, Row, RA, RBP, RSP};

/// How to go from a frame to its caller's.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Rule {
    /// The CFA (the caller's `rsp`) is `rbp + cfa_off`, else `rsp + cfa_off`.
    pub cfa_rbp: bool,
    pub cfa_off: i32,
    /// The caller's `rbp` is saved at `CFA + rbp_off`; `None`: `rbp` is unchanged.
    pub rbp_off: Option<i16>,
    /// The return address is undefined: the outermost frame (thread or program start).
    pub last: bool,
}

impl Rule {
    /// Packed in one word (bit 63 set: a word of 0 is an empty cache slot).
    pub fn pack(self) -> u64 {
        let rbp = match self.rbp_off {
            Some(o) => (o as u16 as u64) << 32 | 1 << 50,
            None => 0,
        };
        1 << 63
            | self.cfa_off as u32 as u64
            | rbp
            | (self.cfa_rbp as u64) << 48
            | (self.last as u64) << 49
    }

    #[inline(always)]
    pub fn unpack(w: u64) -> Rule {
        Rule {
            cfa_rbp: w >> 48 & 1 != 0,
            cfa_off: w as u32 as i32,
            rbp_off: if w >> 50 & 1 != 0 {
                Some((w >> 32) as u16 as i16)
            } else {
                None
            },
            last: w >> 49 & 1 != 0,
        }
    }
}

#[derive(Clone, Copy)]
struct Reader {
    p: *const u8,
    end: *const u8,
}

impl Reader {
    unsafe fn u8(&mut self) -> Option<u8> {
        if self.p >= self.end {
            return None;
        }
        let v = *self.p;
        self.p = self.p.add(1);
        Some(v)
    }

    unsafe fn fixed<const N: usize>(&mut self) -> Option<[u8; N]> {
        if (self.end as usize).saturating_sub(self.p as usize) < N {
            return None;
        }
        let v = std::ptr::read_unaligned(self.p as *const [u8; N]);
        self.p = self.p.add(N);
        Some(v)
    }

    unsafe fn uleb(&mut self) -> Option<u64> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = self.u8()?;
            if shift < 64 {
                v |= ((b & 0x7f) as u64) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
    }

    unsafe fn sleb(&mut self) -> Option<i64> {
        let (mut v, mut shift) = (0i64, 0);
        loop {
            let b = self.u8()?;
            if shift < 64 {
                v |= ((b & 0x7f) as i64) << shift;
            }
            shift += 7;
            if b & 0x80 == 0 {
                if shift < 64 && b & 0x40 != 0 {
                    v |= -1i64 << shift;
                }
                return Some(v);
            }
        }
    }

    /// A pointer in `enc` (absolute or pc-relative; data-relative to `data`).
    unsafe fn ptr(&mut self, enc: u8, data: u64) -> Option<u64> {
        let at = self.p as u64;
        let v = match enc & 0x0f {
            0x00 => u64::from_le_bytes(self.fixed::<8>()?),
            0x01 => self.uleb()?,
            0x02 => u16::from_le_bytes(self.fixed::<2>()?) as u64,
            0x03 => u32::from_le_bytes(self.fixed::<4>()?) as u64,
            0x04 => u64::from_le_bytes(self.fixed::<8>()?),
            0x09 => self.sleb()? as u64,
            0x0a => i16::from_le_bytes(self.fixed::<2>()?) as u64,
            0x0b => i32::from_le_bytes(self.fixed::<4>()?) as u64,
            0x0c => u64::from_le_bytes(self.fixed::<8>()?),
            _ => return None,
        };
        match enc & 0x70 {
            0x00 => Some(v),
            0x10 => Some(v.wrapping_add(at)),
            0x30 => Some(v.wrapping_add(data)),
            _ => None,
        }
    }
}

struct Find {
    pc: u64,
    hdr: u64,
}

unsafe extern "C" fn find_object(
    info: *mut libc::dl_phdr_info,
    _: usize,
    data: *mut c_void,
) -> c_int {
    let f = &mut *(data as *mut Find);
    let info = &*info;
    let phdrs = std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize);
    let base = info.dlpi_addr;
    let inside = phdrs.iter().any(|p| {
        p.p_type == libc::PT_LOAD && f.pc >= base + p.p_vaddr && f.pc < base + p.p_vaddr + p.p_memsz
    });
    if !inside {
        return 0;
    }
    if let Some(p) = phdrs.iter().find(|p| p.p_type == libc::PT_GNU_EH_FRAME) {
        f.hdr = base + p.p_vaddr;
    }
    1
}

/// The FDE of the last entry at or below `pc` in its object's `.eh_frame_hdr` table;
/// `Some(None)`: the object has the usual table and no entry starts at or below `pc`; `None`:
/// no object, no table, or a table of another form.
unsafe fn find_fde(pc: u64) -> Option<Option<*const u8>> {
    let mut f = Find { pc, hdr: 0 };
    libc::dl_iterate_phdr(Some(find_object), &mut f as *mut Find as *mut c_void);
    if f.hdr == 0 {
        return None;
    }
    let hdr = f.hdr as *const u8;
    let mut r = Reader {
        p: hdr,
        end: hdr.add(16),
    };
    let (version, frame_enc, count_enc, table_enc) = (r.u8()?, r.u8()?, r.u8()?, r.u8()?);
    // The table's usual form (GNU ld, gold, lld): 4-byte offsets from the header.
    if version != 1 || table_enc != 0x3b {
        return None;
    }
    r.end = hdr.add(64);
    r.ptr(frame_enc, f.hdr)?;
    let count = r.ptr(count_enc, f.hdr)? as usize;
    let table = r.p as *const [i32; 2];
    // The last entry starting at or below pc.
    let (mut lo, mut hi) = (0usize, count);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if f.hdr.wrapping_add((*table.add(mid))[0] as i64 as u64) <= pc {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if lo == 0 {
        return Some(None);
    }
    Some(Some(hdr.offset((*table.add(lo - 1))[1] as isize)))
}

/// An entry's (CIE or FDE) contents after its length and id words, and its id word's address.
unsafe fn entry(p: *const u8) -> Option<(Reader, *const u8)> {
    let len = u32::from_le_bytes(std::ptr::read_unaligned(p as *const [u8; 4]));
    // 0 ends the section; 0xffffffff (64-bit lengths) is not written for x86-64 code.
    if len == 0 || len == 0xffff_ffff {
        return None;
    }
    let id_at = p.add(4);
    Some((
        Reader {
            p: id_at.add(4),
            end: id_at.add(len as usize),
        },
        id_at,
    ))
}

struct Cie {
    code_align: u64,
    data_align: i64,
    fde_enc: u8,
    has_aug_data: bool,
    instructions: Reader,
}

unsafe fn cie(p: *const u8) -> Option<Cie> {
    let (mut r, id_at) = entry(p)?;
    if std::ptr::read_unaligned(id_at as *const u32) != 0 {
        return None;
    }
    let version = r.u8()?;
    if version != 1 && version != 3 {
        return None;
    }
    let aug = r.p;
    let mut aug_len = 0;
    while r.u8()? != 0 {
        aug_len += 1;
    }
    let aug = std::slice::from_raw_parts(aug, aug_len);
    let code_align = r.uleb()?;
    let data_align = r.sleb()?;
    let ra = if version == 1 {
        r.u8()? as u64
    } else {
        r.uleb()?
    };
    if ra != RA {
        return None;
    }
    let mut fde_enc = 0u8;
    let has_aug_data = aug.first() == Some(&b'z');
    if has_aug_data {
        let len = r.uleb()? as usize;
        let after = r.p.add(len);
        for &c in &aug[1..] {
            match c {
                b'R' => fde_enc = r.u8()?,
                b'L' => {
                    r.u8()?;
                }
                b'P' => {
                    let enc = r.u8()?;
                    r.ptr(enc & 0x7f, 0)?;
                }
                // 'S' (a signal frame) and anything unknown: libunwind's.
                _ => return None,
            }
        }
        r.p = after;
    } else if !aug.is_empty() {
        return None;
    }
    Some(Cie {
        code_align,
        data_align,
        fde_enc,
        has_aug_data,
        instructions: r,
    })
}

/// An FDE's CIE, its instructions (after the augmentation data) and its code range.
unsafe fn fde_parts(fde: *const u8) -> Option<(Cie, Reader, u64, u64)> {
    let (mut r, id_at) = entry(fde)?;
    let cie_off = std::ptr::read_unaligned(id_at as *const u32);
    if cie_off == 0 {
        return None;
    }
    let c = cie(id_at.sub(cie_off as usize))?;
    let start = r.ptr(c.fde_enc, 0)?;
    let range = r.ptr(c.fde_enc & 0x0f, 0)?;
    Some((c, r, start, start.wrapping_add(range)))
}

/// `pc` is in an object whose usual `.eh_frame_hdr` table has no entry covering it (code
/// without unwind information, such as the loader's `_dl_start_user`).
pub unsafe fn uncovered(pc: u64) -> bool {
    match find_fde(pc) {
        Some(None) => true,
        Some(Some(fde)) => fde_parts(fde).is_some_and(|(_, _, start, end)| pc < start || pc >= end),
        None => false,
    }
}

/// The rule at `pc` (a return address minus one, or the exact address of the first frame).
pub unsafe fn rule_at(pc: u64) -> Option<Rule> {
    let (c, mut r, start, end) = fde_parts(find_fde(pc)??)?;
    if pc < start || pc >= end {
        return None;
    }
    if c.has_aug_data {
        let len = r.uleb()? as usize;
        r.p = r.p.add(len);
    }
    let init = Row {
        cfa_reg: 0xff,
        cfa_off: 0,
        rbp: Reg::Same,
        rsp: Reg::Same,
        ra: Reg::Same,
    };
    let mut ins = c.instructions;
    let init = run(&mut ins, &c, init, init, u64::MAX, u64::MAX)?;
    let row = run(&mut r, &c, init, init, start, pc)?;
    if row.cfa_reg != RBP && row.cfa_reg != RSP || row.rsp != Reg::Same {
        return None;
    }
    let cfa_off = i32::try_from(row.cfa_off).ok()?;
    let rbp_off = match row.rbp {
        Reg::Same => None,
        Reg::At(o) => Some(i16::try_from(o).ok()?),
        _ => return None,
    };
    let last = match row.ra {
        Reg::At(-8) => false,
        Reg::Undefined => true,
        _ => return None,
    };
    Some(Rule {
        cfa_rbp: row.cfa_reg == RBP,
        cfa_off,
        rbp_off,
        last,
    })
}
