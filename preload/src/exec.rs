//! exec: the image's events are written before the process image is replaced. glibc's exec
//! functions call `execve` inside libc, not through the PLT, so each one a program may call
//! is interposed: the array forms (`execve`, `execv`, `execvp`, `execvpe`, `fexecve`,
//! `execveat`) as functions, and on x86-64 the list forms (`execl`, `execle`, `execlp`: C
//! variadic, which stable Rust cannot define) as trampolines that keep the caller's arguments
//! as they are, write the events, and jump to libc's own. Without them an image that ended in
//! `execl` lost its unwritten events.

use crate::hooks::ready;
use crate::real::{self, get};
use crate::state;
use libc::{c_char, c_int};

macro_rules! exec_wrapper {
    ($name:ident, $slot:ident, ($($arg:ident: $t:ty),*)) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $t),*) -> c_int {
            if !ready(&real::$slot) {
                *libc::__errno_location() = libc::ENOSYS;
                return -1;
            }
            state::before_exec();
            // SAFETY: `ready` found the real function, of this signature.
            let f: unsafe extern "C" fn($($t),*) -> c_int =
                std::mem::transmute(get(&real::$slot).unwrap_unchecked());
            f($($arg),*)
        }
    };
}

exec_wrapper!(execve, EXECVE, (path: *const c_char, argv: *const *const c_char, envp: *const *const c_char));
exec_wrapper!(execv, EXECV, (path: *const c_char, argv: *const *const c_char));
exec_wrapper!(execvp, EXECVP, (file: *const c_char, argv: *const *const c_char));
exec_wrapper!(execvpe, EXECVPE, (file: *const c_char, argv: *const *const c_char, envp: *const *const c_char));
exec_wrapper!(fexecve, FEXECVE, (fd: c_int, argv: *const *const c_char, envp: *const *const c_char));
exec_wrapper!(execveat, EXECVEAT, (dirfd: c_int, path: *const c_char, argv: *const *const c_char, envp: *const *const c_char, flags: c_int));

/// The list forms' step before libc's own: the events written, and the address of libc's
/// function `which` (0 `execl`, 1 `execle`, 2 `execlp`) to jump to; 0 if it is not known
/// (errno is then set: the call fails as the array forms' do).
#[cfg(target_arch = "x86_64")]
extern "C" fn before_list_exec(which: usize) -> usize {
    let slot = match which {
        0 => &real::EXECL,
        1 => &real::EXECLE,
        _ => &real::EXECLP,
    };
    if !ready(slot) {
        // SAFETY: errno is this thread's.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return 0;
    }
    // SAFETY: the process is about to exec; what it recorded is written first.
    unsafe { state::before_exec() };
    get(slot).unwrap_or(0)
}

/// A list form whose libc function is not known: the call fails (errno is set).
#[cfg(target_arch = "x86_64")]
extern "C" fn list_exec_failed() -> c_int {
    -1
}

#[cfg(target_arch = "x86_64")]
macro_rules! list_exec {
    ($name:ident, $which:literal) => {
        #[unsafe(naked)]
        #[no_mangle]
        pub unsafe extern "C" fn $name() {
            std::arch::naked_asm!(
                // The caller's register arguments, and al (the vector registers a variadic
                // call passes), kept across the call; seven pushes leave the stack aligned.
                "push rdi",
                "push rsi",
                "push rdx",
                "push rcx",
                "push r8",
                "push r9",
                "push rax",
                "mov edi, {which}",
                "call {before}",
                "mov r11, rax",
                "pop rax",
                "pop r9",
                "pop r8",
                "pop rcx",
                "pop rdx",
                "pop rsi",
                "pop rdi",
                "test r11, r11",
                "jz {failed}",
                // libc's own, with the arguments on the stack where the caller left them.
                "jmp r11",
                which = const $which,
                before = sym before_list_exec,
                failed = sym list_exec_failed,
            )
        }
    };
}

#[cfg(target_arch = "x86_64")]
list_exec!(execl, 0);
#[cfg(target_arch = "x86_64")]
list_exec!(execle, 1);
#[cfg(target_arch = "x86_64")]
list_exec!(execlp, 2);
