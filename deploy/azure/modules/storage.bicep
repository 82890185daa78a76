// The storage account (Entra ID only: shared keys are off), its blob container and queues, and
// the role assignments each identity needs, each scoped to the one container or queue it uses.
//
// Why these roles and not smaller ones:
// - api: Storage Blob Data Contributor on the container. It creates the container at start-up
//   if missing, streams uploads into it and deletes a file's blob.
// - relay: Storage Queue Data Contributor on the task queue. It only sends (Message Sender would
//   do for that), but every `worker run` creates its queue at start-up if missing, and Create
//   Queue is not in the message roles.
// - consumer: Storage Blob Data Reader on the container (it only downloads), and Storage Queue
//   Data Contributor on the task queue and the poison queue: it creates them at start-up,
//   receives, deletes, extends a message's visibility during a long parse (Update Message, not
//   in Message Processor) and sends poisoned messages on. The job's KEDA scale rule uses the
//   same identity to read the task queue's length.
// - sources: Storage Blob Data Contributor on the container (it writes the blobs it imports)
//   and Storage Queue Data Contributor on the events queue (it creates it if missing, receives
//   and deletes); the job's scale rule reads that queue's length as it.

param name string
param location string
param blobContainer string
param queueName string
param apiPrincipalId string
param relayPrincipalId string
param consumerPrincipalId string
param sourceEventsQueue string
param sourcesPrincipalId string

var roles = {
  blobDataContributor: 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'
  blobDataReader: '2a2b9908-6ea1-4ae2-8e65-a410df84e7d1'
  queueDataContributor: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
}

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  // 3–24 lowercase letters and digits, unique in Azure.
  name: take(toLower('${replace(name, '-', '')}${uniqueString(resourceGroup().id)}'), 24)
  location: location
  kind: 'StorageV2'
  sku: {
    name: 'Standard_LRS'
  }
  properties: {
    allowSharedKeyAccess: false
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: account
  name: 'default'
}

resource container 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: blobContainer
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: account
  name: 'default'
}

resource taskQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: queueName
}

resource poisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: '${queueName}-poison'
}

resource apiBlobs 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: container
  name: guid(container.id, apiPrincipalId, roles.blobDataContributor)
  properties: {
    principalId: apiPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.blobDataContributor)
  }
}

resource relayQueue 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: taskQueue
  name: guid(taskQueue.id, relayPrincipalId, roles.queueDataContributor)
  properties: {
    principalId: relayPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.queueDataContributor)
  }
}

resource consumerBlobs 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: container
  name: guid(container.id, consumerPrincipalId, roles.blobDataReader)
  properties: {
    principalId: consumerPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.blobDataReader)
  }
}

resource consumerQueue 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: taskQueue
  name: guid(taskQueue.id, consumerPrincipalId, roles.queueDataContributor)
  properties: {
    principalId: consumerPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.queueDataContributor)
  }
}

resource consumerPoisonQueue 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: poisonQueue
  name: guid(poisonQueue.id, consumerPrincipalId, roles.queueDataContributor)
  properties: {
    principalId: consumerPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.queueDataContributor)
  }
}

resource eventsQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: queueService
  name: sourceEventsQueue
}

resource sourcesBlobs 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: container
  name: guid(container.id, sourcesPrincipalId, roles.blobDataContributor)
  properties: {
    principalId: sourcesPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.blobDataContributor)
  }
}

resource sourcesQueue 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  scope: eventsQueue
  name: guid(eventsQueue.id, sourcesPrincipalId, roles.queueDataContributor)
  properties: {
    principalId: sourcesPrincipalId
    principalType: 'ServicePrincipal'
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', roles.queueDataContributor)
  }
}

output accountName string = account.name
output accountId string = account.id
