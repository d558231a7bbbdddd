/* placeholder: the shim is being written */
#include "config.h"
