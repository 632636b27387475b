/* caps.h — dropping every capability: bounding, ambient, inheritable, permitted, effective. */
#pragma once

/* Parent side: the highest capability number this kernel knows (/proc/sys/kernel/cap_last_cap). */
int sbx_caps_last_cap(void);

/* Child side, syscalls only: drop the bounding set up to last_cap (needs CAP_SETPCAP, which a
 * fresh user namespace's creator holds), clear ambient, then zero the three sets. */
int sbx_caps_drop_all(int last_cap);
