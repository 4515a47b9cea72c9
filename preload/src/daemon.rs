//! `daemon`: glibc's forks and ends the parent with `_exit` called inside libc, past the
//! recorder's `_exit`, so the parent's unwritten calls were lost and its trace said it was
//! killed. This one does what glibc's does (fork; `_exit(0)` in the parent; `setsid`;
//! `chdir("/")` unless `nochdir`; unless `noclose`, `/dev/null`, checked to be that device,
//! on descriptors 0, 1 and 2), the parent leaving through the recorder's `_exit`.

use libc::c_int;

#[no_mangle]
pub unsafe extern "C" fn daemon(nochdir: c_int, noclose: c_int) -> c_int {
    match libc::fork() {
        -1 => return -1,
        0 => {}
        _ => crate::hooks::_exit(0),
    }
    if libc::setsid() == -1 {
        return -1;
    }
    if nochdir == 0 {
        libc::chdir(c"/".as_ptr());
    }
    if noclose == 0 {
        let fd = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if fd == -1 {
            return -1;
        }
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            libc::close(fd);
            return -1;
        }
        if st.st_mode & libc::S_IFMT != libc::S_IFCHR || st.st_rdev != libc::makedev(1, 3) {
            libc::close(fd);
            *libc::__errno_location() = libc::ENODEV;
            return -1;
        }
        for target in 0..3 {
            libc::dup2(fd, target);
        }
        if fd > 2 {
            libc::close(fd);
        }
    }
    0
}
