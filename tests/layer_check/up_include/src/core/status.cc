#include "models/dit.h"
