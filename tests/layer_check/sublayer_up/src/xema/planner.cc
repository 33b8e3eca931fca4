#include "xema/serve/server.h"
