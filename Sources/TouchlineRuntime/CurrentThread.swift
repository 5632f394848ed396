import CShims
import Glibc

/// Lowers the CPU priority of the calling thread to `niceness` (0 to 19). Linux schedules
/// threads one by one, so a background thread can yield to the latency-sensitive ones of the
/// same process; lowering needs no privilege. Returns false if the system refused.
public func lowerCurrentThreadPriority(niceness: Int32) -> Bool {
    setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(tl_thread_id()), niceness) == 0
}

/// Names the calling thread for the system (`top -H`, `/proc/PID/task/*/comm`, debuggers); Linux
/// keeps the first 15 bytes. Foundation's `Thread.name` does not reach the system on Linux.
public func nameCurrentThread(_ name: String) {
    tl_set_thread_name(name)
}

/// Asks the fair scheduler for time slices of `slice` on the calling thread (`sched_setattr`
/// with `sched_runtime`). On Linux 6.12 and later a thread with shorter slices than the running
/// one preempts it when it wakes, instead of waiting up to the running thread's slice (1.4 ms by
/// default on a 2-CPU machine); earlier kernels take the request and keep their usual
/// scheduling. Needs no privilege. Returns false if the system refused.
public func requestCurrentThreadSlice(_ slice: Duration) -> Bool {
    tl_set_thread_slice(UInt64(max(0, slice.inNanoseconds))) == 0
}
