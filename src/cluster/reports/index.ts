/** src/cluster/reports: the public entry other folders import (no reaching into its files). */
