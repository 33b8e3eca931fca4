#include "compass/plan.h"
