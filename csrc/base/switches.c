/* switches.c - the test switches (vn_test_control, the public header's last section):
 * the one door for test-only behaviour, switches the production paths read, off unless a
 * test sets them. Lock-free, so a fork() child never waits on a parent's lock here. */
#include "layer_base.h"

static atomic_int switches[VN_TEST_DRIVER_CANNOT_FORK + 1];

int vn_test_control(vn_test_switch which, int value) {
    if ((int)which < VN_TEST_SPLIT_SUBMITS_EVERYWHERE || (int)which > VN_TEST_DRIVER_CANNOT_FORK) {
        vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_test_control: no switch %d. Fix: pass a vn_test_switch.", (int)which);
        return -1;
    }
#ifndef VN_LOCK_RANK_CHECK
    if (which == VN_TEST_BREAK_LOCK_ORDER && value != 0) {
        vn_fail(VN_ERROR_UNSUPPORTED, "vn_test_control: breaking the lock order needs the lock-order check, which this "
                "build lacks. Fix: build with VN_LOCK_RANK_CHECK (scripts/asan.sh does).");
        return -1;
    }
#endif
    if (which == VN_TEST_COMPILE_STACK_KIB) {
        if (value < 0) {
            vn_fail(VN_ERROR_INVALID_ARGUMENT, "vn_test_control: a compile stack of %d KiB. Fix: pass 0 (the computed "
                    "size) or a positive size.", value);
            return -1;
        }
        return atomic_exchange(&switches[which], value);
    }
    return atomic_exchange(&switches[which], value != 0);
}

bool vn_test_switch_on(vn_test_switch which) { return vn_test_switch_value(which) != 0; }

int vn_test_switch_value(vn_test_switch which) { return atomic_load_explicit(&switches[which], memory_order_relaxed); }
