#include "compass/engine/run.h"
#include "xema/serve/server.h"
