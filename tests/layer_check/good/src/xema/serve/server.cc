#include "xema/trace.h"
