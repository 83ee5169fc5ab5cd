// The loaded objects of this process image (path, address range, load bias, GNU build id), sent
// to the parent so it can symbolize return addresses after this process is gone.
#pragma once

namespace tleak::agent {

// Sends a kModule record for every loaded object if the set changed since the last call (or on
// the first). Calls dl_iterate_phdr, which takes the loader's lock: never call it while holding a
// thread buffer's lock (a thread inside dlopen may be waiting for its own).
void send_modules_if_changed();

// The dlclose the program would have called without tleak (the agent's dlclose sends the map
// first: agent.h, before_unload).
int real_dlclose(void* handle);

}  // namespace tleak::agent
