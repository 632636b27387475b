/* caps.h — dropping every capability: bounding, ambient, inheritable, permitted, effective. */
#pragma once

/* Parent side: the highest capability number this kernel knows (/proc/sys/kernel/cap_last_cap). */
int sbx_caps_last_cap(void);

/* The two halves, for when ids change in between (root dropping to run_as without a user
 * namespace: the bounding set needs CAP_SETPCAP, which the uid change takes away). */
int sbx_caps_drop_bounding(int last_cap);
int sbx_caps_clear(void);
